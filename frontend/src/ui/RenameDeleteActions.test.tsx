import { screen, waitFor } from '@testing-library/react';
import userEvent from '@testing-library/user-event';
import { describe, expect, it, vi } from 'vitest';
import { renderUi } from '../test/renderUi';
import { RenameDeleteActions } from './RenameDeleteActions';

describe('rename and delete row actions', () => {
  it('shows only the actions it is given handlers for', () => {
    renderUi(<RenameDeleteActions noun="group" name="Vision" deleteNote="Only a group without members can be deleted." onRename={() => {}} />);

    expect(screen.getByRole('button', { name: 'Rename' })).toBeInTheDocument();
    expect(screen.queryByRole('button', { name: 'Delete' })).not.toBeInTheDocument();
  });

  it('renames at once and deletes only once confirmed, naming the row', async () => {
    const onRename = vi.fn();
    const onDelete = vi.fn(() => Promise.resolve());
    renderUi(
      <RenameDeleteActions
        noun="organization"
        name="Research"
        deleteNote="Only an organization without groups can be deleted."
        onRename={onRename}
        onDelete={onDelete}
      />,
    );
    const user = userEvent.setup();

    await user.click(screen.getByRole('button', { name: 'Rename' }));
    expect(onRename).toHaveBeenCalledTimes(1);

    await user.click(screen.getByRole('button', { name: 'Delete' }));
    const dialog = await screen.findByRole('dialog', { name: 'Delete organization' });
    expect(dialog).toHaveTextContent('Delete “Research”? Only an organization without groups can be deleted.');
    expect(onDelete).not.toHaveBeenCalled();
    await user.click(screen.getByRole('button', { name: 'Delete organization' }));

    await waitFor(() => expect(onDelete).toHaveBeenCalledTimes(1));
  });
});
