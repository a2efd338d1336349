import { screen, waitFor, within } from '@testing-library/react';
import userEvent from '@testing-library/user-event';
import { describe, expect, it } from 'vitest';
import type { AdmissionPreviewIn, AdmissionPreviewOut } from '../api/hooks/sessions';
import { apiError, json, stubFetch, type StubRequest } from '../test/fetchStub';
import { makeMe } from '../test/fixtures';
import { renderApp } from '../test/render';
import { makeBooking } from '../bookings/testData';
import { formatClock } from '../queue/countdown';
import { GROUP_ID, makeImage, makeMembership, makeSession, makeTier, makeVolume, OTHER_GROUP_ID } from './testData';

const me = json(
  200,
  makeMe({
    memberships: [
      makeMembership(),
      makeMembership({ group_id: OTHER_GROUP_ID, group_name: 'Vision', org_name: 'Research' }),
    ],
  }),
);

const catalog = json(200, {
  items: [
    makeImage(),
    makeImage({ id: 'img-torch', name: 'PyTorch notebook', description: '' }),
    makeImage({ id: 'img-code', session_type: 'vscode', name: 'VS Code', reference: 'registry.example.org/code:1' }),
  ],
});
const tiers = json(200, {
  items: [
    makeTier({ free_slots: 3 }),
    makeTier({ id: 't2', name: '1/2', vram_mib: 40960, price_per_hour: '5', free_slots: 0, estimated_wait_seconds: 600 }),
  ],
});
const volumes = json(200, {
  items: [
    makeVolume({ id: 'v-free', name: 'home-old', size_gib: 20 }),
    makeVolume({ id: 'v-busy', name: 'home-busy', used_by: [{ session_id: 's9', name: 'other', state: 'running' }] }),
    makeVolume({ id: 'v-data', kind: 'shared', name: 'datasets', size_gib: 500, access_mode: 'ReadOnlyMany', group_id: GROUP_ID }),
    makeVolume({ id: 'v-vision', kind: 'shared', name: 'vision-data', group_id: OTHER_GROUP_ID }),
  ],
  home_total_gib: 30,
  storage_limit_gib: 100,
});

/** Queues a GPU request at position 2; a CPU-only one starts at once. */
function preview(request: StubRequest) {
  const body = request.body as AdmissionPreviewIn;
  const answer: AdmissionPreviewOut = body.tier_id
    ? {
        outcome: 'queue',
        message: 'Every 1/2 slot is taken.',
        price_per_hour: '5',
        available_credits: '100',
        hours_affordable: 20,
        queue_position: 2,
        estimated_wait_seconds: 600,
      }
    : {
        outcome: 'start',
        message: 'A slot is free.',
        price_per_hour: '0.1',
        available_credits: '100',
        hours_affordable: 1000,
        queue_position: null,
        estimated_wait_seconds: null,
      };
  return json(200, answer);
}

function routes(extra: Parameters<typeof stubFetch>[0] = {}) {
  return stubFetch({
    'GET /api/v1/me': me,
    'GET /api/v1/catalog': catalog,
    'GET /api/v1/tiers': tiers,
    'GET /api/v1/volumes': volumes,
    'POST /api/v1/admission/preview': preview,
    'GET /api/v1/sessions': json(200, { items: [] }),
    'GET /api/v1/bookings': json(200, { items: [] }),
    'GET /api/v1/usage/sizing': json(200, NO_ADVICE),
    ...extra,
  });
}

const NO_ADVICE = { sessions: 0, peak_vram_mib: null, smaller: null, near_limit: 0, in_words: null };

async function choose(label: string, option: string) {
  const user = userEvent.setup();
  await user.click(screen.getByRole('combobox', { name: label }));
  await user.click(await screen.findByRole('option', { name: option, hidden: true }));
}

describe('new session', () => {
  it('says when the last sessions of the image would have fitted a cheaper tier, and switches to it', async () => {
    const said = 'Your last 8 sessions on 1/2 A100-80GB peaked at 9 GiB: 1/4 A100-80GB would have fitted, at half the price.';
    const api = routes({
      'GET /api/v1/usage/sizing': (request) =>
        json(
          200,
          request.query.get('tier_id') === 't2'
            ? {
                sessions: 8,
                peak_vram_mib: 9216,
                smaller: { tier_id: 't1', model: 'A100-80GB', name: '1/4', vram_mib: 20480, price_per_hour: '2.5' },
                near_limit: 0,
                in_words: said,
              }
            : NO_ADVICE,
        ),
    });
    renderApp('/sessions/new');
    await screen.findByRole('region', { name: 'Admission preview' });
    expect(screen.queryByText(said)).not.toBeInTheDocument();
    await choose('GPU', 'A100-80GB 1/2 · 40 GiB · 5 credits/h · none free, queues about 10 min');
    expect(await screen.findByText(said)).toBeInTheDocument();
    const asked = api.callsTo('GET', '/api/v1/usage/sizing').at(-1)!;
    expect(asked.query.get('image')).toBe(makeImage().reference);
    await userEvent.setup().click(screen.getByRole('button', { name: 'Use 1/4 A100-80GB' }));
    expect(screen.getByRole('combobox', { name: 'GPU' })).toHaveValue('A100-80GB 1/4 · 20 GiB · 2.5 credits/h · 3 free now');
    await waitFor(() => expect(screen.queryByText(said)).not.toBeInTheDocument());
  });

  it('previews the choice and sends what was chosen', async () => {
    const api = routes({ 'POST /api/v1/sessions': json(201, makeSession()) });
    renderApp('/sessions/new');
    const user = userEvent.setup();

    // The cheapest GPU with a free slot at first; the preview asks about it, never CPU only.
    await screen.findByRole('region', { name: 'Admission preview' });
    expect(screen.getByRole('combobox', { name: 'GPU' })).toHaveValue('A100-80GB 1/4 · 20 GiB · 2.5 credits/h · 3 free now');
    expect(api.callsTo('POST', '/api/v1/admission/preview').map((call) => (call.body as AdmissionPreviewIn).tier_id)).toEqual(['t1']);
    expect(api.callsTo('GET', '/api/v1/tiers')[0].query.get('group_id')).toBe(GROUP_ID);

    await user.type(screen.getByRole('textbox', { name: 'Name' }), 'lab');
    await choose('Image', 'PyTorch notebook');
    await choose('GPU', 'A100-80GB 1/2 · 40 GiB · 5 credits/h · none free, queues about 10 min');
    const cores = screen.getByRole('textbox', { name: 'CPU cores' });
    await user.clear(cores);
    await user.type(cores, '4');

    expect(await screen.findByText('Queues at position 2')).toBeInTheDocument();
    const queued = screen.getByRole('region', { name: 'Admission preview' });
    expect(queued).toHaveTextContent('Estimated wait: about 10 min');
    expect(queued).toHaveTextContent('enough for about 20 h');
    await waitFor(() => {
      const last = api.callsTo('POST', '/api/v1/admission/preview').at(-1)!;
      expect(last.body).toEqual({ group_id: GROUP_ID, tier_id: 't2', cpu_cores: 4, memory_mib: 2048 });
    });

    // A home volume in use by another session is not offered; shared ones are the group's.
    expect(screen.queryByRole('radio', { name: /home-busy/ })).not.toBeInTheDocument();
    expect(screen.queryByRole('checkbox', { name: /vision-data/ })).not.toBeInTheDocument();
    await user.click(screen.getByRole('radio', { name: 'home-old (20 GiB)' }));
    await user.click(screen.getByRole('checkbox', { name: 'datasets (500 GiB, read-only)' }));

    await user.click(screen.getByRole('button', { name: 'Start session' }));
    await waitFor(() => expect(api.callsTo('POST', '/api/v1/sessions')).toHaveLength(1));
    expect(api.callsTo('POST', '/api/v1/sessions')[0].body).toEqual({
      session_type: 'jupyterlab',
      image_id: 'img-torch',
      group_id: GROUP_ID,
      name: 'lab',
      tier_id: 't2',
      cpu_millicores: 4000,
      memory_mib: 2048,
      home_volume_id: 'v-free',
      home_size_gib: null,
      shared_volume_ids: ['v-data'],
    });
    expect(await screen.findByRole('heading', { name: 'Sessions' })).toBeInTheDocument();
  });

  it('offers the images of the chosen type and a new home volume of the given size', async () => {
    const api = routes({ 'POST /api/v1/sessions': json(201, makeSession()) });
    renderApp('/sessions/new');
    const user = userEvent.setup();

    await screen.findByRole('region', { name: 'Admission preview' });
    // Chosen before the group changes, CPU only stays chosen when the other group's tiers load.
    await choose('GPU', 'CPU only');
    await user.click(screen.getByRole('radio', { name: 'VS Code' }));
    expect(screen.getByRole('combobox', { name: 'Image' })).toHaveValue('VS Code');
    await choose('Group', 'Vision (Research)');
    await waitFor(() => expect(api.callsTo('GET', '/api/v1/tiers').at(-1)!.query.get('group_id')).toBe(OTHER_GROUP_ID));
    expect(await screen.findByRole('checkbox', { name: /vision-data/ })).toBeInTheDocument();
    const size = screen.getByRole('textbox', { name: 'Size of the new home volume (GiB)' });
    await user.clear(size);
    await user.type(size, '25');

    await user.click(screen.getByRole('button', { name: 'Start session' }));
    await waitFor(() => expect(api.callsTo('POST', '/api/v1/sessions')).toHaveLength(1));
    expect(api.callsTo('POST', '/api/v1/sessions')[0].body).toMatchObject({
      session_type: 'vscode',
      image_id: 'img-code',
      group_id: OTHER_GROUP_ID,
      tier_id: null,
      cpu_millicores: 1000,
      home_volume_id: null,
      home_size_gib: 25,
      shared_volume_ids: [],
    });
  });

  it('offers the cheapest tier that queues when none is free, and CPU only when none is allowed', async () => {
    const api = routes({
      'GET /api/v1/tiers': (request: StubRequest) =>
        json(200, {
          items:
            request.query.get('group_id') === GROUP_ID
              ? [
                  makeTier({ id: 't-dear', name: '1/2', price_per_hour: '5', free_slots: 0, estimated_wait_seconds: 600 }),
                  makeTier({ free_slots: 0, estimated_wait_seconds: 7200 }),
                ]
              : [],
        }),
    });
    renderApp('/sessions/new');

    await screen.findByRole('region', { name: 'Admission preview' });
    expect(screen.getByRole('combobox', { name: 'GPU' })).toHaveValue(
      'A100-80GB 1/4 · 20 GiB · 2.5 credits/h · none free, queues about 2 h',
    );
    await choose('Group', 'Vision (Research)');
    await waitFor(() => expect(screen.getByRole('combobox', { name: 'GPU' })).toHaveValue('CPU only'));
    expect(screen.getByText('No GPU tier is offered to this group; the session runs on CPUs.')).toBeInTheDocument();
    await waitFor(() => expect(api.callsTo('POST', '/api/v1/admission/preview').at(-1)!.body).toMatchObject({ group_id: OTHER_GROUP_ID, tier_id: null }));
  });

  it('shows why the server refused to start it and stays on the form', async () => {
    routes({
      'POST /api/v1/sessions': apiError(409, 'insufficient_credits', 'You have 1 credit; an hour costs 5.'),
    });
    renderApp('/sessions/new');
    const user = userEvent.setup();

    await screen.findByRole('region', { name: 'Admission preview' });
    await user.click(screen.getByRole('button', { name: 'Start session' }));
    const alert = await screen.findByRole('alert');
    expect(alert).toHaveTextContent('Not enough credits');
    expect(alert).toHaveTextContent('You have 1 credit; an hour costs 5.');
    expect(screen.getByRole('form', { name: 'New session' })).toBeInTheDocument();
  });

  it('shows a denied preview with the policy that denies it', async () => {
    routes({
      'POST /api/v1/admission/preview': json(200, {
        outcome: 'policy_denied',
        message: 'Your group allows one GPU session at once.',
        policy_key: 'max_gpu_sessions',
        policy_scope: 'group',
        price_per_hour: '2.5',
        available_credits: '100',
        hours_affordable: 40,
        queue_position: null,
        estimated_wait_seconds: null,
      }),
    });
    renderApp('/sessions/new');

    const denied = await screen.findByRole('region', { name: 'Admission preview' });
    expect(within(denied).getByText('Not allowed')).toBeInTheDocument();
    expect(denied).toHaveTextContent('Your group allows one GPU session at once.');
    expect(denied).toHaveTextContent("Set by the group's policy (max_gpu_sessions).");
  });

  it('refuses out-of-range values on their fields, with the limits, and sends nothing', async () => {
    const api = routes({ 'POST /api/v1/sessions': json(201, makeSession()) });
    renderApp('/sessions/new');
    const user = userEvent.setup();
    await screen.findByRole('region', { name: 'Admission preview' });

    const typeInto = async (label: string, text: string) => {
      const field = screen.getByRole('textbox', { name: label });
      await user.clear(field);
      await user.type(field, text);
      await user.tab();
      return field;
    };
    const cores = await typeInto('CPU cores', '-3');
    const memory = await typeInto('Memory (GiB)', '0');
    const size = await typeInto('Size of the new home volume (GiB)', '0.5');
    await typeInto('Name', 'x'.repeat(200));

    await user.click(screen.getByRole('button', { name: 'Start session' }));
    expect(await screen.findByText('Enter a number from 0.1 to 256 cores.')).toBeInTheDocument();
    expect(screen.getByText('Enter a number from 0.125 to 4,096 GiB.')).toBeInTheDocument();
    expect(screen.getByText('Enter a whole number from 1 to 16,384 GiB.')).toBeInTheDocument();
    expect(screen.getByText('Use at most 80 characters.')).toBeInTheDocument();
    // What was typed stays as typed: nothing was clamped or cut.
    expect(cores).toHaveValue('-3');
    expect(memory).toHaveValue('0');
    expect(size).toHaveValue('0.5');
    expect(screen.getByRole('textbox', { name: 'Name' })).toHaveValue('x'.repeat(200));
    expect(cores).toHaveAttribute('aria-invalid', 'true');
    expect(api.callsTo('POST', '/api/v1/sessions')).toHaveLength(0);

    await typeInto('CPU cores', '99999');
    expect(cores).toHaveValue('99999');
    expect(screen.getByText('Enter a number from 0.1 to 256 cores.')).toBeInTheDocument();
  });

  it("puts the server's refusal on the field it names", async () => {
    routes({
      'POST /api/v1/sessions': apiError(422, 'invalid_request', 'name: cannot hold control or invisible formatting characters', [
        { field: 'name', message: 'cannot hold control or invisible formatting characters' },
      ]),
    });
    renderApp('/sessions/new');
    const user = userEvent.setup();
    await screen.findByRole('region', { name: 'Admission preview' });

    await user.click(screen.getByRole('button', { name: 'Start session' }));
    expect(await screen.findByText('cannot hold control or invisible formatting characters')).toBeInTheDocument();
    expect(screen.getByRole('textbox', { name: 'Name' })).toHaveAttribute('aria-invalid', 'true');
    expect(screen.queryByRole('alert')).not.toBeInTheDocument();
  });

  it("tells a member of the group's booking of the chosen tier running now", async () => {
    const now = Date.now();
    const window = [new Date(now - 3_600_000).toISOString(), new Date(now + 3_600_000).toISOString()];
    const api = routes({
      'GET /api/v1/bookings': json(200, {
        items: [
          makeBooking({ starts_at: window[0], ends_at: window[1], next_window: window, in_use: 18 }),
          makeBooking({ id: 'b2', title: 'Deadline', tier_id: 't2', tier_name: '1/2', starts_at: window[0], ends_at: window[1], next_window: window }),
          makeBooking({ id: 'b3', title: 'Later', next_window: [window[1], new Date(now + 7_200_000).toISOString()] }),
        ],
      }),
    });
    renderApp('/sessions/new');

    const resources = await screen.findByRole('region', { name: 'Resources' });
    const line = await within(resources).findByText(/Tuesday class/);
    expect(line).toHaveTextContent(`Tuesday class: 12 of 30 booked slots free until ${formatClock(window[1], now)}`);
    expect(within(resources).queryByText(/Deadline/)).not.toBeInTheDocument();
    expect(within(resources).queryByText(/Later/)).not.toBeInTheDocument();
    expect(api.callsTo('GET', '/api/v1/bookings')[0].query.get('group_id')).toBe(GROUP_ID);

    // Another tier: its own booking is told instead.
    await choose('GPU', 'A100-80GB 1/2 · 40 GiB · 5 credits/h · none free, queues about 10 min');
    expect(await within(resources).findByText(/Deadline: 30 slots booked/)).toBeInTheDocument();
    expect(within(resources).queryByText(/Tuesday class/)).not.toBeInTheDocument();
  });
});
