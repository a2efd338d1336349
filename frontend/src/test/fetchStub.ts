import { vi } from 'vitest';

export interface StubRequest {
  method: string;
  path: string;
  query: URLSearchParams;
  headers: Headers;
  body: unknown;
}

type Reply = Response | Promise<Response>;
type Route = Reply | ((request: StubRequest) => Reply);

export function json(status: number, body: unknown, headers: Record<string, string> = {}): Response {
  if (status === 204) return new Response(null, { status });
  return new Response(JSON.stringify(body), {
    status,
    headers: { 'Content-Type': 'application/json', ...headers },
  });
}

export function apiError(
  status: number,
  code: string,
  message: string,
  fields?: { field: string; message: string }[],
): Response {
  return json(status, { error: { code, message, ...(fields ? { fields } : {}) } });
}

/** Never settles: keeps a screen in its loading state. */
export function pending(): Promise<Response> {
  return new Promise(() => {});
}

/**
 * Replaces global fetch with a table of "METHOD /path" routes. Requests that
 * match no route fail the test loudly with a 599 so gaps are easy to spot.
 */
export function stubFetch(routes: Record<string, Route>) {
  const calls: StubRequest[] = [];
  const fetchMock = vi.fn(async (input: RequestInfo | URL, init?: RequestInit) => {
    const request = input instanceof Request ? input : new Request(input, init);
    const url = new URL(request.url);
    const text = request.method === 'GET' || request.method === 'HEAD' ? '' : await request.text();
    const call: StubRequest = {
      method: request.method,
      path: url.pathname,
      query: url.searchParams,
      headers: request.headers,
      body: text ? JSON.parse(text) : undefined,
    };
    calls.push(call);
    const route = routes[`${call.method} ${call.path}`];
    if (route === undefined) return apiError(599, 'unstubbed', `No stub for ${call.method} ${call.path}`);
    // Fresh Response per call: bodies can be read only once.
    const reply = typeof route === 'function' ? route(call) : route;
    return reply instanceof Response ? reply.clone() : reply;
  });
  vi.stubGlobal('fetch', fetchMock);
  return {
    calls,
    callsTo: (method: string, path: string) => calls.filter((c) => c.method === method && c.path === path),
  };
}
