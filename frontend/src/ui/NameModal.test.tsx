import { screen } from '@testing-library/react';
import userEvent from '@testing-library/user-event';
import { describe, expect, it, vi } from 'vitest';
import { ApiError } from '../api/errors';
import { renderUi } from '../test/renderUi';
import { NameModal, validateName } from './NameModal';

describe('the name schema', () => {
  it('takes a name within bounds, and refuses an empty, overlong or invisible one', () => {
    expect(validateName({ name: ' Optics ' })).toEqual({});
    expect(validateName({ name: 'x'.repeat(120) })).toEqual({});
    expect(validateName({ name: '   ' })).toEqual({ name: 'A name is required.' });
    expect(validateName({ name: 'x'.repeat(121) })).toEqual({ name: 'Use at most 120 characters.' });
    expect(validateName({ name: 'Op\u0000tics' })).toEqual({ name: 'Use no control or invisible characters.' });
    expect(validateName({ name: 'Optics\u202e' })).toEqual({ name: 'Use no control or invisible characters.' });
  });
});

describe('NameModal', () => {
  it('refuses an overlong name on the field without sending, then sends the trimmed name', async () => {
    const onSubmit = vi.fn().mockResolvedValue(undefined);
    const onClose = vi.fn();
    renderUi(
      <NameModal opened onClose={onClose} title="New group" submitLabel="Create group" onSubmit={onSubmit} />,
    );
    const user = userEvent.setup();
    await user.click(screen.getByLabelText(/Name/));
    await user.paste('g'.repeat(121));
    await user.click(screen.getByRole('button', { name: 'Create group' }));
    expect(await screen.findByText('Use at most 120 characters.')).toBeInTheDocument();
    expect(onSubmit).not.toHaveBeenCalled();

    await user.clear(screen.getByLabelText(/Name/));
    await user.type(screen.getByLabelText(/Name/), '  Optics  ');
    await user.click(screen.getByRole('button', { name: 'Create group' }));
    expect(onSubmit).toHaveBeenCalledWith('Optics');
    expect(onClose).toHaveBeenCalled();
  });

  it("puts the server's refusal on the field it names", async () => {
    const refusal = new ApiError(422, 'invalid_request', 'The request is invalid.', null, [
      { field: 'name', message: 'That name is taken.' },
    ]);
    const onSubmit = vi.fn().mockRejectedValue(refusal);
    renderUi(
      <NameModal opened onClose={vi.fn()} title="New group" submitLabel="Create group" onSubmit={onSubmit} />,
    );
    const user = userEvent.setup();
    await user.type(screen.getByLabelText(/Name/), 'Optics');
    await user.click(screen.getByRole('button', { name: 'Create group' }));
    expect(await screen.findByText('That name is taken.')).toBeInTheDocument();
  });
});
