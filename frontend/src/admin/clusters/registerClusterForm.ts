/** What the register-cluster form holds, and the schema that says what it may hold. */
import { z } from 'zod';
import { validateWith } from '../../ui/form';

// The server's rules for a cluster name and the largest kubeconfig it accepts.
const NAME_PATTERN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
export const NAME_MAX = 63;
export const KUBECONFIG_MAX = 262_144;
// The server's rule for a sessions domain: two or more lowercase DNS labels, and the ingress's
// port when it is not the standard one.
const DOMAIN_PATTERN = /^([a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?\.)+[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?(:[0-9]{1,5})?$/;
const DOMAIN_MAX = 200;
export const DEFAULT_SESSIONS_DOMAIN = 'sessions.gshare.local';

export type ClusterValues = { name: string; domain: string; kubeconfig: string };

export const NEW_CLUSTER: ClusterValues = { name: '', domain: DEFAULT_SESSIONS_DOMAIN, kubeconfig: '' };

const validPort = (domain: string) => {
  const port = domain.includes(':') ? Number(domain.split(':')[1]) : null;
  return port === null || (port >= 1 && port <= 65535);
};

export const clusterSchema = z.object({
  name: z
    .string()
    .trim()
    .refine((value) => value.length > 0, { error: 'Enter a name.' })
    .refine((value) => value.length <= NAME_MAX, { error: `Use at most ${NAME_MAX} characters.` })
    .refine((value) => !value || value.length > NAME_MAX || NAME_PATTERN.test(value), {
      error: 'Use lowercase letters, digits and dashes, starting and ending with a letter or digit.',
    }),
  domain: z
    .string()
    .trim()
    .toLowerCase()
    .refine((value) => value.length > 0, { error: 'Enter the domain session pages are served under.' })
    .refine((value) => value.length <= DOMAIN_MAX, { error: `Use at most ${DOMAIN_MAX} characters.` })
    .refine((value) => !value || value.length > DOMAIN_MAX || DOMAIN_PATTERN.test(value), {
      error: 'Enter a domain name such as sessions.example.org.',
    })
    .refine((value) => !DOMAIN_PATTERN.test(value) || validPort(value), { error: 'The port must be between 1 and 65535.' }),
  kubeconfig: z
    .string()
    .refine((value) => value.trim().length > 0, { error: 'Paste a kubeconfig or choose its file.' })
    .refine((value) => value.length <= KUBECONFIG_MAX, { error: 'This kubeconfig is too large (256 KiB at most).' })
    .refine((value) => !value.includes('\u0000'), { error: 'Remove the NUL character; a kubeconfig is text.' }),
});
export const validateCluster = validateWith(clusterSchema);

/** The server's request field paths, as the form's fields. */
export const CLUSTER_FIELDS: Record<string, keyof ClusterValues> = {
  name: 'name',
  sessions_domain: 'domain',
  kubeconfig: 'kubeconfig',
};

/** The request, with the name trimmed and the domain lowercased as the server would. */
export function clusterRequest(values: ClusterValues) {
  return { name: values.name.trim(), kubeconfig: values.kubeconfig, sessions_domain: values.domain.trim().toLowerCase() };
}
