/** What the isolation forms hold (a node's dedication, a cluster's sandbox class) and the schemas that say what they may hold. */
import { z } from 'zod';
import type { ClusterIsolationPut, DedicationCreate } from '../../api/types';
import { validateWith } from '../../ui/form';

export type DedicateValues = {
  /** The organization the node goes to, or whose group it goes to. */
  orgId: string | null;
  /** A group of that organization; null: the whole organization. */
  groupId: string | null;
};

export const dedicateSchema = z.object({
  orgId: z.string().nullable().refine((value) => Boolean(value), { error: 'Choose an organization.' }),
  groupId: z.string().nullable(),
});

export const validateDedicate = validateWith(dedicateSchema);

export function dedicationRequest(values: DedicateValues, clusterId: string, node: string): DedicationCreate {
  return values.groupId
    ? { cluster_id: clusterId, node, group_id: values.groupId }
    : { cluster_id: clusterId, node, organization_id: values.orgId };
}

export type ClusterIsolationValues = {
  sandboxClass: string;
  userNamespaces: boolean;
};

// As Kubernetes names a RuntimeClass (the server's `RuntimeClassName`): a DNS subdomain.
const RUNTIME_CLASS = /^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/;
export const RUNTIME_CLASS_MAX = 253;

export const clusterIsolationSchema = z.object({
  sandboxClass: z
    .string()
    .trim()
    .refine((value) => value.length <= RUNTIME_CLASS_MAX, { error: `Use at most ${RUNTIME_CLASS_MAX} characters.` })
    .refine((value) => value === '' || RUNTIME_CLASS.test(value), {
      error: 'A RuntimeClass name: lowercase letters, digits, dots and dashes, starting and ending with a letter or digit.',
    }),
  userNamespaces: z.boolean(),
});

export const validateClusterIsolation = validateWith(clusterIsolationSchema);

export function clusterIsolationRequest(values: ClusterIsolationValues): ClusterIsolationPut {
  const sandbox = values.sandboxClass.trim();
  return { sandbox_runtime_class: sandbox === '' ? null : sandbox, user_namespaces: values.userNamespaces };
}

/** Whether a node is ready for what it is dedicated to, in a line an admin can act on. */
export function readiness(node: {
  dedication: { label: string } | null;
  dedicated_label: string | null;
  dedicated_tainted: boolean;
}): string {
  const wanted = node.dedication?.label ?? null;
  if (wanted === null) {
    if (node.dedicated_label || node.dedicated_tainted) return 'Carries a dedication label or taint it has no dedication for.';
    return 'Shared.';
  }
  const missing = [
    node.dedicated_label === wanted ? null : `label gshare.io/dedicated=${wanted}`,
    node.dedicated_tainted ? null : `taint gshare.io/dedicated=${wanted}:NoSchedule`,
  ].filter(Boolean);
  return missing.length ? `Needs the ${missing.join(' and the ')}.` : 'Labelled and tainted.';
}
