/**
 * The admin API's errors as the dashboard shows them: every non-2xx answer is an RFC 9457
 * problem+json body `{ type, title, status, code, detail?, errors? }` (coordinator `errors.ts`);
 * {@link ApiProblem} carries it so a screen can show its `title` and `detail` as given.
 */

/** One field error of a 422 `VALIDATION_FAILED` problem. */
export interface FieldError {
  readonly field?: string;
  readonly message?: string;
}

/** A problem+json body as the coordinator sends it. */
export interface ProblemBody {
  readonly type?: string;
  readonly title: string;
  readonly status: number;
  /** Stable machine code, e.g. `SESSION_REQUIRED`, `STEP_UP_REQUIRED`, `VALIDATION_FAILED`. */
  readonly code: string;
  readonly detail?: string;
  readonly errors?: readonly FieldError[];
}

/** An admin API call that did not succeed: the problem body, or one made up for a network failure. */
export class ApiProblem extends Error {
  readonly status: number;
  readonly code: string;
  readonly title: string;
  readonly detail: string | undefined;
  readonly errors: readonly FieldError[];

  constructor(body: ProblemBody) {
    super(body.detail ? `${body.title}: ${body.detail}` : body.title);
    this.name = 'ApiProblem';
    this.status = body.status;
    this.code = body.code;
    this.title = body.title;
    this.detail = body.detail;
    this.errors = body.errors ?? [];
  }
}

/** Turn a failed response's parsed body (or its absence) into an {@link ApiProblem}. */
export function toApiProblem(status: number, body: unknown): ApiProblem {
  if (body !== null && typeof body === 'object' && typeof (body as ProblemBody).title === 'string') {
    const b = body as ProblemBody;
    return new ApiProblem({ ...b, status: b.status ?? status, code: b.code ?? `HTTP_${status}` });
  }
  return new ApiProblem({ title: `The server answered ${status}`, status, code: `HTTP_${status}` });
}

/** Whether `e` is a problem with one of `codes`. */
export const isProblem = (e: unknown, ...codes: string[]): e is ApiProblem =>
  e instanceof ApiProblem && (codes.length === 0 || codes.includes(e.code));
