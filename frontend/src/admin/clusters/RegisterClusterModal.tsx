import { Alert, Button, FileButton, Group, Modal, Stack, Text, Textarea, TextInput } from '@mantine/core';
import { useForm } from '@mantine/form';
import { useEffect, useRef, useState } from 'react';
import { isApiError } from '../../api/errors';
import { useRegisterCluster } from '../../api/hooks/clusters';
import type { ClusterOut } from '../../api/types';
import { serverErrors } from '../../ui/form';
import {
  CLUSTER_FIELDS,
  clusterRequest,
  KUBECONFIG_MAX,
  NEW_CLUSTER,
  validateCluster,
  type ClusterValues,
} from './registerClusterForm';

const PROBLEM_TITLES: Record<string, string> = {
  invalid_kubeconfig: 'The kubeconfig was not accepted',
  cluster_unreachable: 'The cluster could not be reached',
  crd_missing: 'The cluster is not ready for GShare',
};

interface Problem {
  title?: string;
  message: string;
}

interface RegisterClusterModalProps {
  opened: boolean;
  onClose: () => void;
  onRegistered: (cluster: ClusterOut) => void;
}

export function RegisterClusterModal({ opened, onClose, onRegistered }: RegisterClusterModalProps) {
  const register = useRegisterCluster();
  const form = useForm<ClusterValues>({ initialValues: NEW_CLUSTER, validate: validateCluster, validateInputOnBlur: true });
  const [fileName, setFileName] = useState<string | null>(null);
  const [problem, setProblem] = useState<Problem | null>(null);
  const resetFile = useRef<() => void>(null);
  const { reset: clearForm } = form;

  useEffect(() => {
    // Also on close, so the credentials do not linger in the form.
    clearForm();
    setFileName(null);
    setProblem(null);
  }, [opened, clearForm]);

  const readFile = async (file: File | null) => {
    resetFile.current?.();
    if (!file) return;
    if (file.size > KUBECONFIG_MAX) {
      form.setFieldError('kubeconfig', 'This file is too large for a kubeconfig (256 KiB at most).');
      return;
    }
    try {
      const text = await file.text();
      if (text.includes('\u0000')) {
        form.setFieldError('kubeconfig', 'This file is not text; choose a kubeconfig file.');
        return;
      }
      form.setFieldValue('kubeconfig', text);
      form.clearFieldError('kubeconfig');
      setFileName(file.name);
    } catch {
      form.setFieldError('kubeconfig', 'The file could not be read.');
    }
  };

  const submit = (values: ClusterValues) => {
    setProblem(null);
    register.mutate(clusterRequest(values), {
      onSuccess: (cluster) => {
        onRegistered(cluster);
        onClose();
      },
      onError: (error) => {
        if (isApiError(error, 409, 'already_exists') || isApiError(error, 409, 'local_cluster_kept')) {
          form.setFieldError('name', error.message);
          return;
        }
        const { onFields, rest } = serverErrors(error, CLUSTER_FIELDS, Object.keys(form.values));
        form.setErrors(onFields);
        if (rest) setProblem({ title: isApiError(error, 422) ? PROBLEM_TITLES[error.code] : undefined, message: rest });
      },
    });
  };

  return (
    <Modal opened={opened} onClose={onClose} title="Register cluster" centered size="lg">
      <form onSubmit={form.onSubmit(submit)} noValidate>
        <Stack>
          <TextInput
            label="Name"
            description="Lowercase letters, digits and dashes; up to 63 characters."
            autoComplete="off"
            {...form.getInputProps('name')}
            data-autofocus
          />
          <TextInput
            label="Sessions domain"
            description="Session pages are served at https://<session id>.<this domain>/ by the cluster's ingress; use the domain its operator is configured with (GSHARE_SESSIONS_DOMAIN), with :port if the ingress does not listen on 443."
            autoComplete="off"
            spellCheck={false}
            {...form.getInputProps('domain')}
          />
          <Stack gap={6}>
            <Textarea
              label="Kubeconfig"
              description="Its certificates and key must be embedded: certificate-authority-data, client-certificate-data and client-key-data. GShare keeps it in its secret store and never shows it again."
              {...form.getInputProps('kubeconfig')}
              onChange={(event) => {
                form.getInputProps('kubeconfig').onChange(event);
                setFileName(null);
              }}
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
