import { screen, within } from '@testing-library/react';
import { describe, expect, it } from 'vitest';
import type { StartupStepOut } from '../api/hooks/sessions';
import { renderUi } from '../test/renderUi';
import { explainReason, showsStartup, StartupSteps } from './StartupSteps';
import { makeSession } from './testData';

function step(step: StartupStepOut['step'], at: string, extra: Partial<StartupStepOut> = {}): StartupStepOut {
  return { step, at, reason: '', message: '', image_size_bytes: null, count: 1, ...extra };
}

const requested = '2026-11-30T10:00:00Z';

describe('StartupSteps', () => {
  it('shows each step reached with the time since the start, and the next one in progress', () => {
    const session = makeSession({
      state: 'starting',
      startup_requested_at: requested,
      startup_steps: [
        step('allocated', '2026-11-30T10:00:05Z', { message: 'GPU-1' }),
        step('scheduled', '2026-11-30T10:00:06Z'),
        step('pulling', '2026-11-30T10:00:07Z'),
        step('pulled', '2026-11-30T10:03:07Z', { image_size_bytes: 4 * 1024 ** 3 }),
      ],
    });
    renderUi(<StartupSteps session={session} />);
    const steps = screen.getByLabelText('Start-up steps');
    expect(within(steps).getByText('Card allocated')).toBeInTheDocument();
    expect(within(steps).getByText('Placed on a machine')).toBeInTheDocument();
    expect(within(steps).getByText(/after about 3 min · 4 GiB/)).toBeInTheDocument();
    expect(within(steps).getByText('Starting the container')).toBeInTheDocument();
    expect(within(steps).getByLabelText('in progress')).toBeInTheDocument();
    expect(within(steps).getByText('Waiting for the program to listen')).toBeInTheDocument();
  });

  it('explains a stuck image download in plain words and keeps the raw reason', () => {
    const session = makeSession({
      state: 'starting',
      startup_requested_at: requested,
      startup_steps: [
        step('allocated', '2026-11-30T10:00:05Z'),
        step('scheduled', '2026-11-30T10:00:06Z'),
        step('pulling', '2026-11-30T10:00:07Z'),
        step('warning', '2026-11-30T10:02:00Z', {
          reason: 'ImagePullBackOff',
          message: 'Back-off pulling image "registry.example/nope:1"',
          count: 5,
        }),
      ],
    });
    renderUi(<StartupSteps session={session} />);
    const alert = screen.getByRole('alert', { name: 'ImagePullBackOff' });
    expect(within(alert).getByText("The session's image could not be downloaded.")).toBeInTheDocument();
    expect(within(alert).getByText('ImagePullBackOff')).toBeInTheDocument();
    expect(within(alert).getByText('5 times')).toBeInTheDocument();
    expect(within(alert).getByText(/registry\.example\/nope:1/)).toBeInTheDocument();
    expect(screen.getByText('Downloading the image')).toBeInTheDocument();
  });

  it('marks where a failed start stopped and shows no spinner', () => {
    const session = makeSession({
      state: 'failed',
      startup_requested_at: requested,
      startup_steps: [
        step('allocated', '2026-11-30T10:00:05Z'),
        step('warning', '2026-11-30T10:00:09Z', { reason: 'FailedScheduling', message: '0/2 nodes are available' }),
      ],
    });
    expect(showsStartup(session)).toBe(true);
    renderUi(<StartupSteps session={session} />);
    expect(screen.getByText('How the start went')).toBeInTheDocument();
    expect(screen.queryByLabelText('in progress')).not.toBeInTheDocument();
    expect(screen.getByRole('alert', { name: 'FailedScheduling' })).toHaveTextContent(/not enough free resources/);
  });

  it('is shown while starting and after a failed start only', () => {
    expect(showsStartup(makeSession({ state: 'starting', startup_steps: [] }))).toBe(true);
    expect(showsStartup(makeSession({ state: 'failed', startup_steps: [] }))).toBe(false);
    expect(showsStartup(makeSession({ state: 'running', startup_steps: [step('ready', requested)] }))).toBe(false);
  });

  it('says a reason it does not know as a general problem', () => {
    expect(explainReason('SomethingNew')).toBe('The cluster reported a problem.');
    expect(explainReason('BackOff', 'Back-off restarting failed container')).toMatch(/keeps stopping/);
    expect(explainReason('Failed', 'Failed to pull image "x"')).toMatch(/image could not be downloaded/);
  });
});
