import { QueryClient, type QueryKey } from '@tanstack/react-query';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { makeMe } from '../test/fixtures';
import { apiError, json, stubFetch } from '../test/fetchStub';
import { queries } from './keys';
import {
  EVENTS_PATH,
  FIRST_RETRY_MS,
  MAX_RETRY_MS,
  RECONNECT_GRACE_MS,
  getLiveState,
  startLive,
  subscribeLiveState,
  type LiveSource,
} from './live';

const CONNECTING = 0;
const OPEN = 1;
const CLOSED = 2;

/** Stands in for the browser's EventSource, which jsdom lacks; the test drives it. */
class FakeSource implements LiveSource {
  readyState = CONNECTING;
  onopen: ((event: Event) => void) | null = null;
  onerror: ((event: Event) => void) | null = null;
  private listeners = new Map<string, ((event: MessageEvent) => void)[]>();

  constructor(readonly url: string) {}

  addEventListener(type: string, listener: (event: MessageEvent) => void) {
    this.listeners.set(type, [...(this.listeners.get(type) ?? []), listener]);
  }

  close() {
    this.readyState = CLOSED;
  }

  open() {
    this.readyState = OPEN;
    this.onopen?.(new Event('open'));
  }

  emit(kind: string, id: string, data: object = {}) {
    const event = new MessageEvent(kind, { data: JSON.stringify(data), lastEventId: id });
    for (const listener of this.listeners.get(kind) ?? []) listener(event);
  }

  /** The stream broke; `givenUp` when the browser will not reconnect by itself. */
  drop(givenUp: boolean) {
    this.readyState = givenUp ? CLOSED : CONNECTING;
    this.onerror?.(new Event('error'));
  }
}

function connect(client: QueryClient) {
  const sources: FakeSource[] = [];
  const stop = startLive(client, (url) => {
    const source = new FakeSource(url);
    sources.push(source);
    return source;
  });
  return { sources, latest: () => sources[sources.length - 1], stop };
}

const walletKey: QueryKey = queries.myWallet().queryKey;
const orgKey: QueryKey = queries.org('o1').queryKey;

function clientWithData() {
  const client = new QueryClient({ defaultOptions: { queries: { retry: false, gcTime: Infinity } } });
  client.setQueryData(walletKey, {});
  client.setQueryData(orgKey, {});
  client.setQueryData(queries.me().queryKey, makeMe());
  return client;
}

const isStale = (client: QueryClient, key: QueryKey) => client.getQueryState(key)?.isInvalidated === true;

let stops: (() => void)[] = [];
beforeEach(() => {
  vi.useFakeTimers();
  stops = [];
});
afterEach(() => {
  for (const stop of stops) stop();
  vi.useRealTimers();
});

function started(client: QueryClient) {
  const live = connect(client);
  stops.push(live.stop);
  return live;
}

describe('live updates', () => {
  it('open one stream, go live, and refresh what each event changed', async () => {
    const client = clientWithData();
    const live = started(client);
    expect(live.sources).toHaveLength(1);
    expect(live.latest().url).toBe(EVENTS_PATH);
    expect(getLiveState()).toBe('connecting');

    live.latest().open();
    expect(getLiveState()).toBe('live');

    live.latest().emit('notification.created', '3', { id: 'n1', kind: 'credits.received', title: 'Credits' });
    await vi.runAllTimersAsync();
    expect(isStale(client, walletKey)).toBe(false);

    live.latest().emit('wallet.changed', '4', { wallet_id: 'w1', balance: '10' });
    await vi.runAllTimersAsync();
    expect(isStale(client, walletKey)).toBe(true);
    expect(isStale(client, orgKey)).toBe(false);
  });

  it('keep one stream per tab: starting again closes the earlier one', () => {
    const client = clientWithData();
    const first = started(client);
    const second = started(client);
    expect(first.latest().readyState).toBe(CLOSED);
    expect(second.latest().readyState).toBe(CONNECTING);
  });

  it('close the stream when stopped', () => {
    const live = connect(clientWithData());
    live.latest().open();
    live.stop();
    expect(live.latest().readyState).toBe(CLOSED);
    expect(getLiveState()).toBe('connecting');
  });

  it('let the browser reconnect by itself, and report an interruption only past a grace period', async () => {
    const client = clientWithData();
    const live = started(client);
    live.latest().open();
    live.latest().emit('wallet.changed', '9');
    await vi.runAllTimersAsync();
    client.setQueryData(walletKey, {});

    live.latest().drop(false);
    expect(getLiveState()).toBe('connecting');
    await vi.advanceTimersByTimeAsync(RECONNECT_GRACE_MS - 1);
    expect(getLiveState()).toBe('connecting');
    await vi.advanceTimersByTimeAsync(1);
    expect(getLiveState()).toBe('interrupted');

    live.latest().open();
    expect(getLiveState()).toBe('live');
    expect(live.sources).toHaveLength(1);
    // The server replays from Last-Event-ID; nothing is reloaded on the client's side.
    await vi.runAllTimersAsync();
    expect(isStale(client, walletKey)).toBe(false);
  });

  it('reconnect after the browser gives up, backing off from 1 s to 30 s, resuming from the last id', async () => {
    const api = stubFetch({ 'GET /api/v1/me': json(200, makeMe()) });
    const live = started(clientWithData());
    live.latest().open();
    live.latest().emit('wallet.changed', '41');

    const delays: number[] = [];
    for (let attempt = 0; attempt < 7; attempt++) {
      const before = live.sources.length;
      live.latest().drop(true);
      expect(getLiveState()).toBe('interrupted');
      let waited = 0;
      while (live.sources.length === before) {
        await vi.advanceTimersByTimeAsync(250);
        waited += 250;
        expect(waited).toBeLessThanOrEqual(MAX_RETRY_MS);
      }
      delays.push(waited);
    }
    expect(delays).toEqual([1_000, 2_000, 4_000, 8_000, 16_000, 30_000, 30_000]);
    expect(live.latest().url).toBe(`${EVENTS_PATH}?last_event_id=41`);
    expect(api.callsTo('GET', '/api/v1/me')).toHaveLength(7);

    // A successful open starts the back-off over.
    live.latest().open();
    expect(getLiveState()).toBe('live');
    live.latest().drop(true);
    await vi.advanceTimersByTimeAsync(FIRST_RETRY_MS);
    expect(live.sources).toHaveLength(9);
  });

  it('resume from the newest id, a replayed reset included', async () => {
    stubFetch({ 'GET /api/v1/me': json(200, makeMe()) });
    const client = clientWithData();
    const live = started(client);
    live.latest().open();
    live.latest().emit('wallet.changed', '5');
    live.latest().emit('reset', '80');
    await vi.runAllTimersAsync();
    expect(isStale(client, orgKey)).toBe(true);

    live.latest().drop(true);
    await vi.advanceTimersByTimeAsync(FIRST_RETRY_MS);
    expect(live.latest().url).toBe(`${EVENTS_PATH}?last_event_id=80`);
  });

  it('reload everything once on reopening when there was no id to resume from', async () => {
    stubFetch({ 'GET /api/v1/me': json(200, makeMe()) });
    const client = clientWithData();
    const live = started(client);
    live.latest().drop(true);
    await vi.advanceTimersByTimeAsync(FIRST_RETRY_MS);
    expect(live.latest().url).toBe(EVENTS_PATH);
    expect(isStale(client, orgKey)).toBe(false);

    live.latest().open();
    await vi.runAllTimersAsync();
    expect(isStale(client, orgKey)).toBe(true);
  });

  it('stop when the sign-in has ended, leaving the console signed out', async () => {
    stubFetch({ 'GET /api/v1/me': apiError(401, 'not_authenticated', 'Sign in first.') });
    const client = clientWithData();
    const live = started(client);
    live.latest().open();
    live.latest().drop(true);
    await vi.advanceTimersByTimeAsync(MAX_RETRY_MS * 4);

    expect(live.sources).toHaveLength(1);
    expect(client.getQueryData(queries.me().queryKey)).toBeNull();
    expect(getLiveState()).toBe('connecting');
  });

  it('keep trying while the server cannot be reached', async () => {
    stubFetch({ 'GET /api/v1/me': () => Promise.reject(new TypeError('Failed to fetch')) });
    const live = started(clientWithData());
    live.latest().drop(true);
    await vi.advanceTimersByTimeAsync(FIRST_RETRY_MS);
    expect(live.sources).toHaveLength(2);
  });

  it('tell subscribers when the state changes', () => {
    const seen: string[] = [];
    const unsubscribe = subscribeLiveState(() => seen.push(getLiveState()));
    const live = started(clientWithData());
    live.latest().open();
    live.latest().drop(true);
    unsubscribe();
    live.latest().open();
    expect(seen).toEqual(['live', 'interrupted']);
  });
});
