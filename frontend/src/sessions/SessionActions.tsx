import { Alert, Button, Checkbox, Group, Modal, Stack, Text } from '@mantine/core';
import { useState } from 'react';
import { useNavigate } from 'react-router';
import { errorMessage } from '../api/errors';
import {
  useDeleteSession,
  useSessionCommand,
  useSessionEntry,
  type SessionCommand,
  type SessionOut,
} from '../api/hooks/sessions';
import { ConfirmButton } from '../ui/ConfirmButton';

/** Opens the session's page in a new tab; the error says why when it could not. */
function useOpenSession() {
  const entry = useSessionEntry();
  const [problem, setProblem] = useState<string | null>(null);
  const open = async (sessionId: string) => {
    setProblem(null);
    // The tab opens within the click, before the link is fetched, so pop-up blockers allow it.
    const tab = window.open('', '_blank');
    try {
      const { url } = await entry.mutateAsync(sessionId);
      if (tab) {
        tab.opener = null;
        tab.location.href = url;
      } else {
        window.location.assign(url);
      }
    } catch (err) {
      tab?.close();
      setProblem(errorMessage(err));
    }
  };
  return { open, busy: entry.isPending, problem, clearProblem: () => setProblem(null) };
}

function DeleteSessionButton({ session, onDeleted }: { session: SessionOut; onDeleted?: () => void }) {
  const remove = useDeleteSession();
  const [opened, setOpened] = useState(false);
  const [deleteHome, setDeleteHome] = useState(false);
  const [problem, setProblem] = useState<string | null>(null);
  const home = session.volumes.find((volume) => volume.kind === 'home');

  const close = () => {
    if (remove.isPending) return;
    setOpened(false);
    setDeleteHome(false);
    setProblem(null);
  };

  const confirm = async () => {
    setProblem(null);
    try {
      await remove.mutateAsync({ sessionId: session.id, deleteHome: Boolean(home) && deleteHome });
      setOpened(false);
      onDeleted?.();
    } catch (err) {
      setProblem(errorMessage(err));
    }
  };

  return (
    <>
      <Button size="xs" variant="light" color="red" onClick={() => setOpened(true)}>
        Delete
      </Button>
      <Modal opened={opened} onClose={close} title="Delete session" centered>
        <Stack gap="md">
          <Text size="sm">
            Delete {session.name}? It is stopped if it still runs and leaves your list; its history and charges stay.
          </Text>
          {home && (
            <Checkbox
              label={`Also delete its home volume ${home.name}`}
              description="Everything saved in it is lost. Keep it to use it in a new session."
              checked={deleteHome}
              onChange={(event) => setDeleteHome(event.currentTarget.checked)}
            />
          )}
          {problem && (
            <Alert color="red" role="alert">
              {problem}
            </Alert>
          )}
        </Stack>
        <Group justify="flex-end" mt="lg">
          <Button variant="default" onClick={close} disabled={remove.isPending}>
            Cancel
          </Button>
          <Button color="red" onClick={() => void confirm()} loading={remove.isPending}>
            Delete session
          </Button>
        </Group>
      </Modal>
    </>
  );
}

/**
 * What the owner may do with a session now: the server lists the allowed lifecycle actions
 * (`actions`) and whether its page can be opened (`can_open`); only those are offered.
 */
export function SessionActions({ session, afterDelete }: { session: SessionOut; afterDelete?: string }) {
  const command = useSessionCommand();
  const entry = useOpenSession();
  const navigate = useNavigate();
  const [problem, setProblem] = useState<string | null>(null);
  const allowed = new Set(session.actions);

  const clearProblems = () => {
    setProblem(null);
    entry.clearProblem();
  };
  const run = (name: SessionCommand) => {
    clearProblems();
    command.mutate({ sessionId: session.id, command: name }, { onError: (err) => setProblem(errorMessage(err)) });
  };
  const running = (name: SessionCommand) => command.isPending && command.variables?.command === name;
  const shownProblem = problem ?? entry.problem;

  return (
    <Stack gap="xs">
      <Group gap="xs">
        {session.can_open && (
          <Button
            size="xs"
            onClick={() => {
              clearProblems();
              void entry.open(session.id);
            }}
            loading={entry.busy}
          >
            Open
          </Button>
        )}
        {allowed.has('pause') && (
          <Button size="xs" variant="light" onClick={() => run('pause')} loading={running('pause')}>
            Pause
          </Button>
        )}
        {allowed.has('resume') && (
          <Button size="xs" variant="light" onClick={() => run('resume')} loading={running('resume')}>
            Resume
          </Button>
        )}
        {allowed.has('stop') && (
          <ConfirmButton
            label="Stop"
            title="Stop session"
            message={`Stop ${session.name} for good? Its pod is removed and billing ends; its volumes stay.`}
            confirmLabel="Stop session"
            color="orange"
            onConfirm={() => command.mutateAsync({ sessionId: session.id, command: 'stop' })}
          />
        )}
        <DeleteSessionButton session={session} onDeleted={afterDelete ? () => void navigate(afterDelete) : undefined} />
      </Group>
      {shownProblem && (
        <Alert color="red" role="alert" withCloseButton onClose={clearProblems}>
          {shownProblem}
        </Alert>
      )}
    </Stack>
  );
}

/** Defers an announced idle pause. */
export function KeepRunningButton({ session }: { session: SessionOut }) {
  const command = useSessionCommand();
  return (
    <Stack gap={4} align="flex-start">
      <Button
        size="xs"
        color="yellow"
        onClick={() => command.mutate({ sessionId: session.id, command: 'keep-running' })}
        loading={command.isPending}
      >
        Keep running
      </Button>
      {command.error && (
        <Text size="xs" c="red" role="alert">
          {errorMessage(command.error)}
        </Text>
      )}
    </Stack>
  );
}
