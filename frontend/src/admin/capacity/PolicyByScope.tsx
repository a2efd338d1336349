import {
  Alert,
  Button,
  Checkbox,
  Group,
  NumberInput,
  SegmentedControl,
  Select,
  Stack,
  Switch,
  Table,
  TagsInput,
  Text,
} from '@mantine/core';
import { useForm } from '@mantine/form';
import { IconDeviceFloppy } from '@tabler/icons-react';
import { useEffect, useMemo, useRef, useState, type ReactNode } from 'react';
import { useClearPolicy, usePolicy, useSavePolicy, useTiers } from '../../api/hooks/capacity';
import { useOrgs } from '../../api/hooks/orgs';
import type { PolicyScope } from '../../api/types';
import { useSession } from '../../auth/session';
import { ConfirmButton } from '../../ui/ConfirmButton';
import { formatDateTime } from '../../ui/format';
import { serverErrors } from '../../ui/form';
import { notifyDone } from '../../ui/notify';
import { QueryState } from '../../ui/QueryState';
import { labelWithOrg, useActionableGroups } from '../actionableGroups';
import { UserPicker } from '../users/UserPicker';
import { MAX_NAMES, policyRequest, validatePolicy } from './policyForm';
import { draftOf, POLICY_KEYS, SCOPE_LABELS, type PolicyDraft, type PolicyDraftValue, type PolicyKey } from './policyKeys';

/** Model and tier names to suggest: what is on offer now; any name may still be typed. */
function useNameSuggestions() {
  const tiers = useTiers();
  return useMemo(() => {
    const items = tiers.data?.items ?? [];
    return {
      models: [...new Set(items.map((t) => t.model))].sort(),
      tiers: [...new Set(items.map((t) => t.name))].sort(),
    };
  }, [tiers.data]);
}

function KeyInput({
  spec,
  value,
  onChange,
  suggestions,
  disabled,
  error,
}: {
  spec: PolicyKey;
  value: PolicyDraftValue;
  onChange: (value: PolicyDraftValue) => void;
  suggestions: string[];
  disabled: boolean;
  error: ReactNode;
}) {
  if (spec.kind === 'names') {
    return (
      <TagsInput
        aria-label={spec.label}
        data={suggestions}
        value={Array.isArray(value) ? value : []}
        onChange={onChange}
        placeholder={Array.isArray(value) && value.length ? undefined : 'None: no GPU session allowed'}
        disabled={disabled}
        error={error}
        maxTags={MAX_NAMES}
        clearable
      />
    );
  }
  if (spec.kind === 'choice') {
    return (
      <Select
        aria-label={spec.label}
        data={spec.choices ?? []}
        value={typeof value === 'string' && value ? value : null}
        onChange={(chosen) => onChange(chosen ?? '')}
        placeholder="Choose one"
        allowDeselect={false}
        disabled={disabled}
        error={error}
        maw={240}
      />
    );
  }
  if (spec.kind === 'bool') {
    return (
      <Switch
        aria-label={spec.label}
        checked={value === true}
        onChange={(e) => onChange(e.currentTarget.checked)}
        disabled={disabled}
        label={value === true ? 'yes' : 'no'}
        error={error}
      />
    );
  }
  return (
    <NumberInput
      aria-label={spec.label}
      value={typeof value === 'number' || typeof value === 'string' ? value : ''}
      onChange={onChange}
      min={spec.min}
      max={spec.max}
      clampBehavior="none"
      allowDecimal={spec.kind === 'float'}
      error={error}
      rightSection={spec.unit ? <Text size="xs" c="dimmed">{spec.unit}</Text> : undefined}
      rightSectionWidth={spec.unit ? 64 : undefined}
      disabled={disabled}
    />
  );
}

const EMPTY_FOR: Record<PolicyKey['kind'], PolicyDraftValue> = { names: [], int: '', float: '', bool: true, choice: '' };

function PolicyEditor({ scope, scopeId, canSet }: { scope: PolicyScope; scopeId: string | null; canSet: boolean }) {
  const policy = usePolicy(scope, scopeId);
  // The keys that decide between tenants are a super admin's, whoever may set the scope.
  const superAdmin = useSession().can('policy.set_global');
  const save = useSavePolicy();
  const clear = useClearPolicy();
  const suggestions = useNameSuggestions();
  const form = useForm<PolicyDraft>({ initialValues: draftOf({}), validate: validatePolicy, validateInputOnBlur: true });
  const [problem, setProblem] = useState<string | null>(null);
  const latest = useRef(form);
  latest.current = form;

  // Each read of the policy (a save, an event) shows what the scope now sets.
  useEffect(() => {
    if (!policy.data) return;
    const draft = draftOf(policy.data.values);
    latest.current.setValues(draft);
    latest.current.resetDirty(draft);
  }, [policy.data]);

  const setKey = (key: string, value: PolicyDraftValue | undefined) => {
    form.setFieldValue(key, value);
    form.clearFieldError(key);
  };

  const submit = (draft: PolicyDraft) => {
    setProblem(null);
    save.mutate(
      { target: { scope, scopeId }, values: policyRequest(draft) },
      {
        onSuccess: () => notifyDone(`Saved the ${SCOPE_LABELS[scope].toLowerCase()} policy.`),
        onError: (error) => {
          const { onFields, rest } = serverErrors(error, {}, POLICY_KEYS.map(({ key }) => key));
          form.setErrors(onFields);
          setProblem(rest);
        },
      },
    );
  };

  const setCount = Object.values(form.values).filter((v) => v !== undefined).length;

  return (
    <QueryState query={policy}>
      {policy.data && (
        <form onSubmit={form.onSubmit(submit)} noValidate aria-label="Policy">
          <Stack gap="sm">
            <Text size="sm" c="dimmed">
              {policy.data.updated_at
                ? `Last changed ${formatDateTime(policy.data.updated_at)}.`
                : 'This scope sets no keys yet; every key comes from a broader scope.'}{' '}
              A key this scope does not set is inherited.
            </Text>
            <Table.ScrollContainer minWidth={640}>
              <Table verticalSpacing="xs">
                <Table.Thead>
                  <Table.Tr>
                    <Table.Th w={90}>Set here</Table.Th>
                    <Table.Th w={240}>Key</Table.Th>
                    <Table.Th>Value</Table.Th>
                  </Table.Tr>
                </Table.Thead>
                <Table.Tbody>
                  {POLICY_KEYS.filter((spec) => !spec.scopes || spec.scopes.includes(scope)).map((spec) => {
                    const value = form.values[spec.key];
                    const isSet = value !== undefined;
                    const editable = canSet && (!spec.reserved || superAdmin);
                    return (
                      <Table.Tr key={spec.key}>
                        <Table.Td>
                          <Checkbox
                            aria-label={`Set ${spec.label} here`}
                            checked={isSet}
                            disabled={!editable}
                            onChange={(e) => setKey(spec.key, e.currentTarget.checked ? EMPTY_FOR[spec.kind] : undefined)}
                          />
                        </Table.Td>
                        <Table.Td>
                          <Text size="sm">{spec.label}</Text>
                          <Text size="xs" c="dimmed" ff="monospace">
                            {spec.key}
                          </Text>
                          {spec.reserved && canSet && !superAdmin && (
                            <Text size="xs" c="dimmed">
                              Set by a super admin
                            </Text>
                          )}
                        </Table.Td>
                        <Table.Td>
                          {isSet ? (
                            <KeyInput
                              spec={spec}
                              value={value}
                              onChange={(v) => form.setFieldValue(spec.key, v)}
                              suggestions={spec.key === 'allowed_models' ? suggestions.models : suggestions.tiers}
                              disabled={!editable}
                              error={form.errors[spec.key]}
                            />
                          ) : (
                            <Text size="sm" c="dimmed">
                              inherited
                            </Text>
                          )}
                        </Table.Td>
                      </Table.Tr>
                    );
                  })}
                </Table.Tbody>
              </Table>
            </Table.ScrollContainer>
            {problem && (
              <Alert color="red" role="alert" title="The policy was not saved">
                {problem}
              </Alert>
            )}
            {canSet && (
              <Group justify="flex-end">
                {policy.data.updated_at && (
                  <ConfirmButton
                    size="sm"
                    label="Clear policy"
                    title="Clear policy"
                    message={`Clear every key this ${SCOPE_LABELS[scope].toLowerCase()} policy sets? Each then comes from a broader scope.`}
                    confirmLabel="Clear policy"
                    onConfirm={() => clear.mutateAsync({ scope, scopeId })}
                  />
                )}
                <Button type="submit" loading={save.isPending} leftSection={<IconDeviceFloppy size={16} aria-hidden />}>
                  {setCount === 0 ? 'Save (sets nothing)' : 'Save policy'}
                </Button>
              </Group>
            )}
          </Stack>
        </form>
      )}
    </QueryState>
  );
}

/** Pick a scope, then read or edit the policy set there. */
export function PolicyByScope() {
  const { can, canSomewhere } = useSession();
  const orgs = useOrgs('', 200);
  const { groups } = useActionableGroups(null);
  const scopes = (['global', 'organization', 'group', 'user'] as const).filter(
    (scope) =>
      (scope === 'global' && can('policy.read_global')) ||
      (scope === 'organization' && (canSomewhere('policy.read_org') || canSomewhere('policy.set_org'))) ||
      (scope === 'group' && (canSomewhere('policy.read_group') || canSomewhere('policy.set_group'))) ||
      (scope === 'user' && canSomewhere('policy.set_user')),
  );
  const [scope, setScope] = useState<PolicyScope>(scopes[0] ?? 'global');
  const [orgId, setOrgId] = useState<string | null>(null);
  const [groupId, setGroupId] = useState<string | null>(null);
  const [userId, setUserId] = useState<string | null>(null);

  const group = groups.find((g) => g.id === groupId);
  const orgOptions = orgs.items.map((org) => ({ value: org.id, label: org.name }));
  const groupOptions = groups.map((g) => ({ value: g.id, label: labelWithOrg(g) }));
  const scopeId = scope === 'organization' ? orgId : scope === 'group' ? groupId : scope === 'user' ? userId : null;
  const canSet =
    (scope === 'global' && can('policy.set_global')) ||
    (scope === 'organization' && orgId !== null && can('policy.set_org', { orgId })) ||
    (scope === 'group' && group !== undefined && can('policy.set_group', { orgId: group.orgId, groupId: group.id })) ||
    (scope === 'user' && canSomewhere('policy.set_user'));

  if (scopes.length === 0) {
    return (
      <Text size="sm" c="dimmed">
        You cannot read any policy.
      </Text>
    );
  }

  return (
    <Stack gap="md">
      <SegmentedControl
        aria-label="Policy scope"
        value={scope}
        onChange={(value) => setScope(value as PolicyScope)}
        data={scopes.map((s) => ({ value: s, label: SCOPE_LABELS[s] }))}
        maw={520}
      />
      {scope === 'organization' && (
        <Select
          label="Organization"
          data={orgOptions}
          value={orgId}
          onChange={setOrgId}
          searchable
          maw={360}
          nothingFoundMessage={orgs.isPending ? 'Loading…' : 'No organizations'}
        />
      )}
      {scope === 'group' && (
        <Select label="Group" data={groupOptions} value={groupId} onChange={setGroupId} searchable maw={420} />
      )}
      {scope === 'user' && <UserPicker label="User" value={userId} onChange={setUserId} />}
      {scope === 'global' || scopeId ? (
        <PolicyEditor key={`${scope}:${scopeId ?? ''}`} scope={scope} scopeId={scopeId} canSet={canSet} />
      ) : (
        <Text size="sm" c="dimmed">
          Choose {scope === 'organization' ? 'an organization' : `a ${scope}`} to see its policy.
        </Text>
      )}
    </Stack>
  );
}
