import { act, screen } from '@testing-library/react';
import { QueryClient } from '@tanstack/react-query';
import { afterEach, describe, expect, it } from 'vitest';
import { startLive, type LiveSource } from '../api/live';
import { renderUi } from '../test/renderUi';
import { LiveIndicator } from './LiveIndicator';

const OPEN = 1;
const CLOSED = 2;

let stop: () => void = () => {};
afterEach(() => stop());

/** Opens the live connection over a stream the test drives. */
function connect() {
  const source: LiveSource = {
    readyState: 0,
    onopen: null,
    onerror: null,
    addEventListener: () => {},
    close: () => {},
  };
  stop = startLive(new QueryClient(), () => source);
  const signal = (readyState: number, event: 'open' | 'error') =>
    act(() => {
      Object.assign(source, { readyState });
      (event === 'open' ? source.onopen : source.onerror)?.(new Event(event));
    });
  return { open: () => signal(OPEN, 'open'), giveUp: () => signal(CLOSED, 'error') };
}

describe('live indicator', () => {
  it('shows only while live updates are interrupted', () => {
    const stream = connect();
    renderUi(<LiveIndicator />);
    expect(screen.queryByRole('status')).not.toBeInTheDocument();

    stream.open();
    expect(screen.queryByRole('status')).not.toBeInTheDocument();

    stream.giveUp();
    expect(screen.getByRole('status', { name: 'Live updates interrupted — reconnecting' })).toHaveTextContent(
      'Reconnecting…',
    );

    act(() => stop());
    expect(screen.queryByRole('status')).not.toBeInTheDocument();
  });
});
