// The CSRF token lives only in memory: it is re-read from GET /me on every load.
let token: string | null = null;

export function setCsrfToken(value: string | null): void {
  token = value;
}

export function getCsrfToken(): string | null {
  return token;
}
