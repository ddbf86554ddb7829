// @vitest-environment jsdom
import { screen } from '@testing-library/react';
import { describe, expect, it } from 'vitest';
import { ApiProblem } from '../src/api/problem';
import { ProblemAlert } from '../src/components/states';
import { renderAt } from './render';

describe('ProblemAlert', () => {
  it('shows the problem+json title, detail and field errors as the server gave them', () => {
    const p = new ApiProblem({
      title: 'Request validation failed',
      status: 422,
      code: 'VALIDATION_FAILED',
      detail: 'body/name must NOT have fewer than 1 characters',
      errors: [{ field: 'name', message: 'too short' }],
    });
    renderAt(<ProblemAlert error={p} />);
    const alert = screen.getByRole('alert');
    expect(alert.textContent).toContain('Request validation failed');
    expect(alert.textContent).toContain('body/name must NOT have fewer than 1 characters');
    expect(alert.textContent).toContain('name: too short');
  });
});
