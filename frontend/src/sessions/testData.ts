import type { ImageOut, SessionOut, VolumeOut } from '../api/hooks/sessions';
import type { MembershipOut, UsableTierOut } from '../api/types';

export const GROUP_ID = '00000000-0000-4000-8000-0000000000a1';
export const OTHER_GROUP_ID = '00000000-0000-4000-8000-0000000000a2';
const ORG_ID = '00000000-0000-4000-8000-0000000000b1';

export function makeMembership(overrides: Partial<MembershipOut> = {}): MembershipOut {
  return {
    user_id: '00000000-0000-4000-8000-000000000001',
    user_email: 'ada@example.org',
    user_name: 'Ada Lovelace',
    group_id: GROUP_ID,
    group_name: 'Optics',
    org_id: ORG_ID,
    org_name: 'Research',
    role: 'member',
    expires_at: null,
    active: true,
    created_at: '2026-01-01T00:00:00Z',
    ...overrides,
  };
}

/** A running 1/4 A100 session with nothing unusual about it. */
export function makeSession(overrides: Partial<SessionOut> = {}): SessionOut {
  return {
    id: 's1',
    name: 'notebook',
    owner_id: 'u1',
    owner_email: 'ada@example.org',
    session_type: 'jupyterlab',
    image: 'registry.example.org/jupyter:4.1',
    state: 'running',
    state_reason: 'Running on node-a.',
    state_changed_at: '2026-11-30T10:00:00Z',
    created_at: '2026-11-30T09:58:00Z',
    group_id: GROUP_ID,
    cluster_id: null,
    tier_id: 't1',
    model: 'A100-80GB',
    tier_name: '1/4',
    vram_mib: 20480,
    cpu_millicores: 2000,
    memory_mib: 8192,
    price_per_hour: '2.5',
    cost: '12.75',
    billing: true,
    queue_position: null,
    estimated_wait_seconds: null,
    gpu_util_percent: 45,
    vram_used_mib: 2048,
    peak_vram_mib: 3174,
    utilization_at: '2026-11-30T11:59:00Z',
    idle_since: null,
    idle_pause_at: null,
    keep_running_until: null,
    can_keep_running: false,
    actions: ['pause', 'stop'],
    can_open: true,
    volumes: [
      { volume_id: 'v1', name: 'home-s1', kind: 'home', mount_path: '/home/user', read_only: false },
    ],
    notice: null,
    card_freed_at: null,
    ...overrides,
  };
}

type SessionNotice = NonNullable<SessionOut['notice']>;

/** A preemption notice for fair share, given at 12:00 UTC with ten minutes to go. */
export function makeNotice(overrides: Partial<SessionNotice> = {}): SessionNotice {
  return {
    kind: 'preemption',
    reason: 'fair_share',
    message: 'Its card is needed by a group that has had less than its share.',
    noticed_at: '2026-11-30T12:00:00Z',
    deadline: '2026-11-30T12:10:00Z',
    ...overrides,
  };
}

export function makeImage(overrides: Partial<ImageOut> = {}): ImageOut {
  return {
    id: 'img-jupyter',
    session_type: 'jupyterlab',
    name: 'JupyterLab 4',
    reference: 'registry.example.org/jupyter:4.1',
    description: 'Python 3.12 with PyTorch',
    enabled: true,
    ...overrides,
  };
}

export function makeTier(overrides: Partial<UsableTierOut> = {}): UsableTierOut {
  return {
    id: 't1',
    model_id: 'm1',
    model: 'A100-80GB',
    name: '1/4',
    kind: 'fraction',
    denominator: 4,
    mig_profile: null,
    vram_mib: 20480,
    compute_percent: 25,
    price_per_hour: '2.5',
    price_is_default: true,
    retired_at: null,
    free_slots: 1,
    estimated_wait_seconds: null,
    ...overrides,
  };
}

export function makeVolume(overrides: Partial<VolumeOut> = {}): VolumeOut {
  return {
    id: 'v1',
    kind: 'home',
    name: 'home-s1',
    size_gib: 10,
    access_mode: 'ReadWriteOnce',
    group_id: null,
    cluster_id: null,
    created_at: '2026-11-01T00:00:00Z',
    used_by: [],
    used_by_others: 0,
    ...overrides,
  };
}
