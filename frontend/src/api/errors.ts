import type { ErrorBody } from './types';

/** A refused body field, by its path in the request (`cpu_millicores`, `members.0.email`). */
export interface FieldError {
  field: string;
  message: string;
}

export class ApiError extends Error {
  readonly status: number;
  readonly code: string;
  readonly retryAfter: number | null;
  /** With `invalid_request`: what the server refused, field by field. */
  readonly fields: FieldError[];

  constructor(
    status: number,
    code: string,
    message: string,
    retryAfter: number | null = null,
    fields: FieldError[] = [],
  ) {
    super(message);
    this.name = 'ApiError';
    this.status = status;
    this.code = code;
    this.retryAfter = retryAfter;
    this.fields = fields;
  }
}

function isErrorBody(value: unknown): value is ErrorBody {
  if (typeof value !== 'object' || value === null || !('error' in value)) return false;
  const detail = (value as { error: unknown }).error;
  return typeof detail === 'object' && detail !== null && 'message' in detail;
}

export function toApiError(response: Response, body: unknown): ApiError {
  const retry = Number(response.headers.get('Retry-After'));
  const retryAfter = Number.isFinite(retry) && retry > 0 ? retry : null;
  if (isErrorBody(body)) {
    return new ApiError(response.status, body.error.code, body.error.message, retryAfter, body.error.fields ?? []);
  }
  return new ApiError(
    response.status,
    'http_error',
    `The server answered with status ${response.status}.`,
    retryAfter,
  );
}

/** A request field's path as words: `home_size_gib` → "Home size gib", `members.0.email` → "Email". */
function fieldWords(path: string): string {
  const last = path.split('.').filter((part) => !/^\d+$/.test(part)).at(-1) ?? path;
  const words = last.replace(/_/g, ' ');
  return words.charAt(0).toUpperCase() + words.slice(1);
}

export function errorMessage(error: unknown): string {
  if (error instanceof ApiError && error.fields.length > 0) {
    // Where the form has no field of its own to show them on: each field by name, in words.
    return error.fields.map(({ field, message }) => `${fieldWords(field)}: ${message}`).join('; ');
  }
  if (error instanceof ApiError) return error.message;
  if (error instanceof Error && error.message) return error.message;
  return 'Something went wrong.';
}

export function isApiError(error: unknown, status: number, code?: string): error is ApiError {
  return error instanceof ApiError && error.status === status && (code === undefined || error.code === code);
}
