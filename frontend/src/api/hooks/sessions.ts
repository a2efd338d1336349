import { keepPreviousData, useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { api, send, unwrap } from '../client';
import { queries, scopes, type SessionFilters } from '../keys';
import type { components } from '../schema';

type Schemas = components['schemas'];

export type SessionOut = Schemas['SessionOut'];
export type SessionState = SessionOut['state'];
export type SessionType = SessionOut['session_type'];
export type SessionAction = SessionOut['actions'][number];
export type SessionCreate = Schemas['SessionCreate'];
export type TransitionOut = Schemas['TransitionOut'];
export type SessionUsageOut = Schemas['SessionUsageOut'];
export type StartupStepOut = Schemas['StartupStepOut'];
export type MountOut = Schemas['MountOut'];
export type AdmissionPreviewIn = Schemas['AdmissionPreviewIn'];
export type AdmissionPreviewOut = Schemas['AdmissionPreviewOut'];
export type ImageOut = Schemas['ImageOut'];
export type ImageCreate = Schemas['ImageCreate'];
export type ImageUpdate = Schemas['ImageUpdate'];
export type VolumeList = Schemas['VolumeList'];
export type VolumeOut = Schemas['VolumeOut'];
export type SharedVolumeCreate = Schemas['SharedVolumeCreate'];

export type { SessionFilters } from '../keys';

export function useSessions(filters: SessionFilters = {}) {
  return useQuery(queries.sessions(filters));
}

/** One session; while it bills, asked for again each minute, since metering sends no live event. */
export function useSessionDetail(sessionId: string) {
  return useQuery({
    ...queries.session(sessionId),
    refetchInterval: (query) => (query.state.data?.billing ? 60_000 : false),
  });
}

/**
 * A session's use and cost over time. Samples arrive without live events, so while the session
 * runs it is also asked for again: every minute, or every 10 s until its first sample is in.
 */
export function useSessionUsage(sessionId: string, running: boolean) {
  return useQuery({
    ...queries.sessionUsage(sessionId),
    refetchInterval: (query) => (running ? (query.state.data?.points.length ? 60_000 : 10_000) : false),
  });
}

/** A session's change shows in every list and detail, and may move volumes and the queue. */
function useSessionMutation<T, R>(mutationFn: (input: T) => Promise<R>) {
  const client = useQueryClient();
  return useMutation({
    mutationFn,
    onSuccess: () =>
      Promise.all([
        client.invalidateQueries({ queryKey: scopes.sessions }),
        client.invalidateQueries({ queryKey: scopes.volumes }),
        client.invalidateQueries({ queryKey: scopes.queue }),
      ]),
  });
}

const ACTION_PATHS = {
  pause: '/api/v1/sessions/{session_id}/pause',
  resume: '/api/v1/sessions/{session_id}/resume',
  stop: '/api/v1/sessions/{session_id}/stop',
  'keep-running': '/api/v1/sessions/{session_id}/keep-running',
} as const;

export type SessionCommand = keyof typeof ACTION_PATHS;

/** Pause, resume, stop, or defer an announced idle pause. */
export function useSessionCommand() {
  return useSessionMutation(({ sessionId, command }: { sessionId: string; command: SessionCommand }) =>
    unwrap(api.POST(ACTION_PATHS[command], { params: { path: { session_id: sessionId } } })),
  );
}

export function useDeleteSession() {
  return useSessionMutation(({ sessionId, deleteHome }: { sessionId: string; deleteHome: boolean }) =>
    send(
      api.DELETE('/api/v1/sessions/{session_id}', {
        params: { path: { session_id: sessionId }, query: { delete_home: deleteHome } },
      }),
    ),
  );
}

export function useCreateSession() {
  return useSessionMutation((body: SessionCreate) => unwrap(api.POST('/api/v1/sessions', { body })));
}

/** A one-minute link into the session's page. */
export function useSessionEntry() {
  return useMutation({
    mutationFn: (sessionId: string) =>
      unwrap(api.POST('/api/v1/sessions/{session_id}/entry', { params: { path: { session_id: sessionId } } })),
  });
}

/** The admission preview for a session shape; the last answer stays shown while the next loads. */
export function useAdmissionPreview(body: AdmissionPreviewIn | null) {
  return useQuery({
    ...queries.admissionPreview(body ?? { group_id: '', cpu_cores: 0, memory_mib: 0 }),
    enabled: body !== null,
    placeholderData: keepPreviousData,
  });
}

export function useCatalog(includeDisabled = false, enabled = true) {
  return useQuery({ ...queries.catalog(includeDisabled), enabled });
}

function useCatalogMutation<T, R>(mutationFn: (input: T) => Promise<R>) {
  const client = useQueryClient();
  return useMutation({ mutationFn, onSuccess: () => client.invalidateQueries({ queryKey: scopes.catalog }) });
}

export function useAddImage() {
  return useCatalogMutation((body: ImageCreate) => unwrap(api.POST('/api/v1/catalog', { body })));
}

export function useUpdateImage() {
  return useCatalogMutation(({ imageId, body }: { imageId: string; body: ImageUpdate }) =>
    unwrap(api.PATCH('/api/v1/catalog/{image_id}', { params: { path: { image_id: imageId } }, body })),
  );
}

export function useVolumes() {
  return useQuery(queries.volumes());
}

export function useGroupVolumes(groupId: string | null) {
  return useQuery({ ...queries.groupVolumes(groupId ?? ''), enabled: Boolean(groupId) });
}

function useVolumeMutation<T, R>(mutationFn: (input: T) => Promise<R>) {
  const client = useQueryClient();
  return useMutation({ mutationFn, onSuccess: () => client.invalidateQueries({ queryKey: scopes.volumes }) });
}

/** Deletes one of the caller's home volumes (refused while a session uses it). */
export function useDeleteVolume() {
  return useVolumeMutation((volumeId: string) =>
    send(api.DELETE('/api/v1/volumes/{volume_id}', { params: { path: { volume_id: volumeId } } })),
  );
}

export function useCreateGroupVolume() {
  return useVolumeMutation(({ groupId, body }: { groupId: string; body: SharedVolumeCreate }) =>
    unwrap(api.POST('/api/v1/groups/{group_id}/volumes', { params: { path: { group_id: groupId } }, body })),
  );
}

export function useDeleteGroupVolume() {
  return useVolumeMutation(({ groupId, volumeId }: { groupId: string; volumeId: string }) =>
    send(
      api.DELETE('/api/v1/groups/{group_id}/volumes/{volume_id}', {
        params: { path: { group_id: groupId, volume_id: volumeId } },
      }),
    ),
  );
}

export function useWorkerHealth() {
  return useQuery(queries.workerHealth());
}
