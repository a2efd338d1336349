import { Alert, Button, FileButton, Group, Modal, Stack, Text, Textarea, TextInput } from '@mantine/core';
import { useEffect, useRef, useState, type FormEvent } from 'react';
import { errorMessage, isApiError } from '../../api/errors';
import { useRegisterCluster } from '../../api/hooks/clusters';
import type { ClusterOut } from '../../api/types';

// The server's rules for a cluster name and the largest kubeconfig it accepts.
const NAME_PATTERN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const NAME_MAX = 63;
const KUBECONFIG_MAX = 262_144;
// The server's rule for a sessions domain: two or more lowercase DNS labels, and the ingress's
// port when it is not the standard one.
const DOMAIN_PATTERN = /^([a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?\.)+[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?(:[0-9]{1,5})?$/;
const DOMAIN_MAX = 200;
export const DEFAULT_SESSIONS_DOMAIN = 'sessions.gshare.local';

const PROBLEM_TITLES: Record<string, string> = {
  invalid_kubeconfig: 'The kubeconfig was not accepted',
  cluster_unreachable: 'The cluster could not be reached',
  crd_missing: 'The cluster is not ready for GShare',
};

interface Problem {
  title?: string;
  message: string;
}

function checkName(name: string): string | null {
  if (!name) return 'Enter a name.';
  if (name.length > NAME_MAX) return `Use at most ${NAME_MAX} characters.`;
  if (!NAME_PATTERN.test(name)) {
    return 'Use lowercase letters, digits and dashes, starting and ending with a letter or digit.';
  }
  return null;
}

function checkDomain(domain: string): string | null {
  if (!domain) return 'Enter the domain session pages are served under.';
  if (domain.length > DOMAIN_MAX) return `Use at most ${DOMAIN_MAX} characters.`;
  if (!DOMAIN_PATTERN.test(domain)) return 'Enter a domain name such as sessions.example.org.';
  const port = domain.includes(':') ? Number(domain.split(':')[1]) : null;
  if (port !== null && (port < 1 || port > 65535)) return 'The port must be between 1 and 65535.';
  return null;
}

function checkKubeconfig(kubeconfig: string): string | null {
  if (!kubeconfig.trim()) return 'Paste a kubeconfig or choose its file.';
  if (kubeconfig.length > KUBECONFIG_MAX) return 'This kubeconfig is too large (256 KiB at most).';
  return null;
}

interface RegisterClusterModalProps {
  opened: boolean;
  onClose: () => void;
  onRegistered: (cluster: ClusterOut) => void;
}

export function RegisterClusterModal({ opened, onClose, onRegistered }: RegisterClusterModalProps) {
  const register = useRegisterCluster();
  const [name, setName] = useState('');
  const [kubeconfig, setKubeconfig] = useState('');
  const [domain, setDomain] = useState(DEFAULT_SESSIONS_DOMAIN);
  const [domainError, setDomainError] = useState<string | null>(null);
  const [fileName, setFileName] = useState<string | null>(null);
  const [nameError, setNameError] = useState<string | null>(null);
  const [kubeconfigError, setKubeconfigError] = useState<string | null>(null);
  const [problem, setProblem] = useState<Problem | null>(null);
  const resetFile = useRef<() => void>(null);

  useEffect(() => {
    // Also on close, so the credentials do not linger in the form.
    setName('');
    setKubeconfig('');
    setDomain(DEFAULT_SESSIONS_DOMAIN);
    setDomainError(null);
    setFileName(null);
    setNameError(null);
    setKubeconfigError(null);
    setProblem(null);
  }, [opened]);

  const readFile = async (file: File | null) => {
    resetFile.current?.();
    if (!file) return;
    if (file.size > KUBECONFIG_MAX) {
      setKubeconfigError('This file is too large for a kubeconfig (256 KiB at most).');
      return;
    }
    try {
      const text = await file.text();
      if (text.includes('\u0000')) {
        setKubeconfigError('This file is not text; choose a kubeconfig file.');
        return;
      }
      setKubeconfig(text);
      setFileName(file.name);
      setKubeconfigError(null);
    } catch {
      setKubeconfigError('The file could not be read.');
    }
  };

  const submit = (event: FormEvent) => {
    event.preventDefault();
    const trimmedName = name.trim();
    const badName = checkName(trimmedName);
    const badKubeconfig = checkKubeconfig(kubeconfig);
    const trimmedDomain = domain.trim().toLowerCase();
    const badDomain = checkDomain(trimmedDomain);
    setNameError(badName);
    setKubeconfigError(badKubeconfig);
    setDomainError(badDomain);
    setProblem(null);
    if (badName || badKubeconfig || badDomain) return;
    register.mutate(
      { name: trimmedName, kubeconfig, sessions_domain: trimmedDomain },
      {
        onSuccess: (cluster) => {
          onRegistered(cluster);
          onClose();
        },
        onError: (error) => {
          if (isApiError(error, 409, 'already_exists') || isApiError(error, 409, 'local_cluster_kept'))
            setNameError(error.message);
          else setProblem({ title: isApiError(error, 422) ? PROBLEM_TITLES[error.code] : undefined, message: errorMessage(error) });
        },
      },
    );
  };

  return (
    <Modal opened={opened} onClose={onClose} title="Register cluster" centered size="lg">
      <form onSubmit={submit} noValidate>
        <Stack>
          <TextInput
            label="Name"
            description="Lowercase letters, digits and dashes; up to 63 characters."
            autoComplete="off"
            value={name}
            onChange={(event) => setName(event.currentTarget.value)}
            error={nameError}
            data-autofocus
          />
          <TextInput
            label="Sessions domain"
            description="Session pages are served at https://<session id>.<this domain>/ by the cluster's ingress; use the domain its operator is configured with (GSHARE_SESSIONS_DOMAIN), with :port if the ingress does not listen on 443."
            autoComplete="off"
            spellCheck={false}
            value={domain}
            onChange={(event) => setDomain(event.currentTarget.value)}
            error={domainError}
          />
          <Stack gap={6}>
            <Textarea
              label="Kubeconfig"
              description="Its certificates and key must be embedded: certificate-authority-data, client-certificate-data and client-key-data. GShare keeps it in its secret store and never shows it again."
              value={kubeconfig}
              onChange={(event) => {
                setKubeconfig(event.currentTarget.value);
                setFileName(null);
              }}
              error={kubeconfigError}
              rows={12}
              spellCheck={false}
              autoComplete="off"
              autoCapitalize="off"
              styles={{ input: { fontFamily: 'var(--mantine-font-family-monospace)', fontSize: 'var(--mantine-font-size-xs)' } }}
            />
            <Group gap="xs">
              <FileButton
                onChange={(file) => void readFile(file)}
                resetRef={resetFile}
                inputProps={{ 'aria-label': 'Kubeconfig file' }}
              >
                {(props) => (
                  <Button variant="default" size="xs" {...props}>
                    Choose file…
                  </Button>
                )}
              </FileButton>
              {fileName && (
                <Text size="xs" c="dimmed">
                  Filled from {fileName}.
                </Text>
              )}
            </Group>
          </Stack>
          {problem && (
            <Alert color="red" role="alert" title={problem.title}>
              {problem.message}
            </Alert>
          )}
          <Group justify="flex-end">
            <Button variant="default" onClick={onClose} disabled={register.isPending}>
              Cancel
            </Button>
            <Button type="submit" loading={register.isPending}>
              Register
            </Button>
          </Group>
        </Stack>
      </form>
    </Modal>
  );
}
