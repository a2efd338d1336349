import { useQueryClient, type QueryClient } from '@tanstack/react-query';
import { useEffect, useSyncExternalStore } from 'react';
import { queries } from './keys';
import { applyLiveEvent, liveEventKinds } from './liveKeys';

/**
 * The tab's one connection to the server's event stream, which keeps cached queries fresh.
 *
 * The browser's EventSource reconnects by itself (sending `Last-Event-ID`) after a dropped
 * stream; only when it gives up (readyState CLOSED) is a new one opened here, with back-off,
 * resuming from the last id seen through `?last_event_id=`. Missed events are replayed by the
 * server, which sends `reset` when it no longer keeps them, so a reconnect reloads everything
 * only when there was no id to resume from.
 */

export type LiveState = 'connecting' | 'live' | 'interrupted';

export const EVENTS_PATH = '/api/v1/events';
export const FIRST_RETRY_MS = 1_000;
export const MAX_RETRY_MS = 30_000;
/** The server ends every stream after a while; the browser's own reconnect is not news. */
export const RECONNECT_GRACE_MS = 5_000;

const CLOSED = 2;

/** The part of EventSource used here. */
export interface LiveSource {
  readonly readyState: number;
  onopen: ((event: Event) => void) | null;
  onerror: ((event: Event) => void) | null;
  addEventListener(type: string, listener: (event: MessageEvent) => void): void;
  close(): void;
}

export type OpenSource = (url: string) => LiveSource;

let state: LiveState = 'connecting';
const listeners = new Set<() => void>();

function setState(next: LiveState): void {
  if (next === state) return;
  state = next;
  for (const listener of listeners) listener();
}

export function getLiveState(): LiveState {
  return state;
}

export function subscribeLiveState(listener: () => void): () => void {
  listeners.add(listener);
  return () => listeners.delete(listener);
}

export function useLiveState(): LiveState {
  return useSyncExternalStore(subscribeLiveState, getLiveState, getLiveState);
}

class LiveConnection {
  private source: LiveSource | null = null;
  private lastEventId: string | null = null;
  private retryMs = FIRST_RETRY_MS;
  private retryTimer: ReturnType<typeof setTimeout> | undefined;
  private graceTimer: ReturnType<typeof setTimeout> | undefined;
  private interrupted = false;
  private stopped = false;

  constructor(
    private readonly client: QueryClient,
    private readonly openSource: OpenSource,
  ) {}

  start(): void {
    setState('connecting');
    this.open();
  }

  stop(): void {
    this.stopped = true;
    clearTimeout(this.retryTimer);
    clearTimeout(this.graceTimer);
    this.source?.close();
    this.source = null;
    setState('connecting');
  }

  private open(): void {
    const url =
      this.lastEventId === null
        ? EVENTS_PATH
        : `${EVENTS_PATH}?last_event_id=${encodeURIComponent(this.lastEventId)}`;
    const source = this.openSource(url);
    this.source = source;
    source.onopen = () => this.opened(source);
    source.onerror = () => this.failed(source);
    for (const kind of liveEventKinds) {
      source.addEventListener(kind, (event) => this.received(source, event));
    }
  }

  private opened(source: LiveSource): void {
    if (source !== this.source) return;
    clearTimeout(this.graceTimer);
    this.graceTimer = undefined;
    this.retryMs = FIRST_RETRY_MS;
    if (this.interrupted && this.lastEventId === null) void this.client.invalidateQueries();
    this.interrupted = false;
    setState('live');
  }

  private received(source: LiveSource, event: MessageEvent): void {
    if (source !== this.source) return;
    if (event.lastEventId) this.lastEventId = event.lastEventId;
    void applyLiveEvent(this.client, event.type);
  }

  private failed(source: LiveSource): void {
    if (source !== this.source) return;
    this.interrupted = true;
    if (source.readyState === CLOSED) {
      clearTimeout(this.graceTimer);
      this.graceTimer = undefined;
      source.close();
      this.source = null;
      setState('interrupted');
      this.retryTimer = setTimeout(() => void this.reconnect(), this.retryMs);
      this.retryMs = Math.min(this.retryMs * 2, MAX_RETRY_MS);
      return;
    }
    if (state === 'live') setState('connecting');
    this.graceTimer ??= setTimeout(() => setState('interrupted'), RECONNECT_GRACE_MS);
  }

  private async reconnect(): Promise<void> {
    // A stream refused for an ended sign-in looks like any other failure to EventSource;
    // /me tells them apart, and its null answer signs the console out.
    let signedIn = true;
    try {
      signedIn = (await this.client.fetchQuery({ ...queries.me(), staleTime: 0 })) !== null;
    } catch {
      // The server is unreachable: keep trying.
    }
    if (this.stopped) return;
    if (!signedIn) {
      this.stop();
      return;
    }
    this.open();
  }
}

function openEventSource(url: string): LiveSource {
  return new EventSource(url);
}

let current: LiveConnection | null = null;

/** Opens the tab's event stream (closing any earlier one); returns the function that closes it. */
export function startLive(client: QueryClient, openSource: OpenSource = openEventSource): () => void {
  current?.stop();
  const connection = new LiveConnection(client, openSource);
  current = connection;
  connection.start();
  return () => {
    connection.stop();
    if (current === connection) current = null;
  };
}

/** Keeps the event stream open while the calling component (the signed-in shell) is mounted. */
export function useLiveUpdates(): void {
  const client = useQueryClient();
  useEffect(() => {
    // Browsers all have EventSource; test environments may not.
    if (typeof EventSource === 'undefined') return;
    return startLive(client);
  }, [client]);
}
