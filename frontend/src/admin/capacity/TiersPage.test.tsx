import { screen, waitFor, within } from '@testing-library/react';
import userEvent from '@testing-library/user-event';
import { describe, expect, it } from 'vitest';
import type { GpuModelOut, RoleGrantOut, TierOut } from '../../api/types';
import { apiError, json, stubFetch } from '../../test/fetchStub';
import { emptyPage, makeMe, SUPER_ADMIN } from '../../test/fixtures';
import { renderApp } from '../../test/render';

const superAdmin = json(200, makeMe({ csrf_token: 'csrf-admin' }, [SUPER_ADMIN]));
const MODEL_ID = '00000000-0000-4000-8000-000000000101';

function tier(overrides: Partial<TierOut>): TierOut {
  return {
    id: 't-quarter',
    model_id: MODEL_ID,
    model: 'A100-80GB',
    name: '1/4',
    kind: 'fraction',
    denominator: 4,
    mig_profile: null,
    vram_mib: 20480,
    compute_percent: 25,
    price_per_hour: '1',
    price_is_default: true,
    retired_at: null,
    ...overrides,
  };
}

const model: GpuModelOut = {
  id: MODEL_ID,
  name: 'A100-80GB',
  memory_mib: 81920,
  split_count: 4,
  mig_geometry: 'A100-80GB',
  exclusive_price: '4',
  tiers: [
    tier({}),
    tier({ id: 't-excl', name: 'exclusive', kind: 'exclusive', denominator: null, price_per_hour: '5', price_is_default: false }),
    tier({ id: 't-old', name: '1/2', denominator: 2, retired_at: '2026-11-20T00:00:00Z' }),
  ],
};

describe('tiers and prices', () => {
  it('lists each model with its tiers, prices and retired ones', async () => {
    stubFetch({ 'GET /api/v1/me': superAdmin, 'GET /api/v1/gpu-models': json(200, { items: [model] }) });
    renderApp('/admin/tiers');

    const section = await screen.findByRole('region', { name: 'A100-80GB' });
    expect(section).toHaveTextContent('Exclusive price: 4 credits per hour');
    const quarter = within(section).getByText('1/4').closest('tr')!;
    expect(within(quarter).getByText('default')).toBeInTheDocument();
    expect(within(quarter).getByText('Offered')).toBeInTheDocument();
    const exclusive = within(section).getByText('exclusive').closest('tr')!;
    expect(within(exclusive).getByText('5')).toBeInTheDocument();
    expect(within(exclusive).queryByText('default')).not.toBeInTheDocument();
    const retired = within(section).getByText('1/2').closest('tr')!;
    expect(within(retired).getByText(/Retired/)).toBeInTheDocument();
    expect(within(retired).queryByRole('button', { name: 'Retire' })).not.toBeInTheDocument();
  });

  it('says when there are no models yet', async () => {
    stubFetch({ 'GET /api/v1/me': superAdmin, 'GET /api/v1/gpu-models': json(200, { items: [] }) });
    renderApp('/admin/tiers');
    expect(await screen.findByText('No GPU models yet.')).toBeInTheDocument();
  });

  it('edits a tier price, checks it first, and resets another to its default', async () => {
    const api = stubFetch({
      'GET /api/v1/me': superAdmin,
      'GET /api/v1/gpu-models': json(200, { items: [model] }),
      'PATCH /api/v1/tiers/t-quarter': json(200, tier({ price_per_hour: '1.5', price_is_default: false })),
      'PATCH /api/v1/tiers/t-excl': json(200, tier({ id: 't-excl' })),
    });
    renderApp('/admin/tiers');
    const user = userEvent.setup();

    const quarter = (await screen.findByText('1/4')).closest('tr')!;
    await user.click(within(quarter).getByRole('button', { name: 'Edit price' }));
    let dialog = await screen.findByRole('dialog', { name: 'Price of A100-80GB 1/4' });
    expect(within(dialog).queryByRole('button', { name: 'Reset to default' })).not.toBeInTheDocument();
    const input = within(dialog).getByLabelText('Price per hour');
    await user.clear(input);
    await user.type(input, '1,5');
    await user.click(within(dialog).getByRole('button', { name: 'Save price' }));
    expect(await within(dialog).findByText(/using a dot for decimals/)).toBeInTheDocument();
    expect(input).toHaveAttribute('aria-invalid', 'true');
    expect(api.callsTo('PATCH', '/api/v1/tiers/t-quarter')).toHaveLength(0);
    await user.clear(input);
    await user.type(input, '1.50');
    await user.click(within(dialog).getByRole('button', { name: 'Save price' }));
    await waitFor(() => expect(api.callsTo('PATCH', '/api/v1/tiers/t-quarter')).toHaveLength(1));
    expect(api.callsTo('PATCH', '/api/v1/tiers/t-quarter')[0].body).toEqual({ price_per_hour: '1.5' });
    await waitFor(() => expect(screen.queryByRole('dialog')).not.toBeInTheDocument());

    const exclusive = screen.getByText('exclusive').closest('tr')!;
    await user.click(within(exclusive).getByRole('button', { name: 'Edit price' }));
    dialog = await screen.findByRole('dialog', { name: 'Price of A100-80GB exclusive' });
    await user.click(within(dialog).getByRole('button', { name: 'Reset to default' }));
    await waitFor(() => expect(api.callsTo('PATCH', '/api/v1/tiers/t-excl')).toHaveLength(1));
    expect(api.callsTo('PATCH', '/api/v1/tiers/t-excl')[0].body).toEqual({ price_per_hour: null });
  });

  it('adds a fraction tier with the default price and a MIG tier with its own', async () => {
    const api = stubFetch({
      'GET /api/v1/me': superAdmin,
      'GET /api/v1/gpu-models': json(200, { items: [model] }),
      [`POST /api/v1/gpu-models/${MODEL_ID}/tiers`]: json(201, tier({ id: 't-new' })),
    });
    renderApp('/admin/tiers');
    const user = userEvent.setup();

    const section = await screen.findByRole('region', { name: 'A100-80GB' });
    await user.click(within(section).getByRole('button', { name: 'Add tier' }));
    let dialog = await screen.findByRole('dialog', { name: 'Add tier to A100-80GB' });
    const denominator = within(dialog).getByLabelText('Denominator');
    await user.clear(denominator);
    await user.type(denominator, '8');
    await user.click(within(dialog).getByRole('button', { name: 'Add tier' }));
    await waitFor(() => expect(api.callsTo('POST', `/api/v1/gpu-models/${MODEL_ID}/tiers`)).toHaveLength(1));
    expect(api.callsTo('POST', `/api/v1/gpu-models/${MODEL_ID}/tiers`)[0].body).toEqual({ kind: 'fraction', denominator: 8 });
    await waitFor(() => expect(screen.queryByRole('dialog')).not.toBeInTheDocument());

    await user.click(within(section).getByRole('button', { name: 'Add tier' }));
    dialog = await screen.findByRole('dialog', { name: 'Add tier to A100-80GB' });
    await user.click(within(dialog).getByText('MIG'));
    await user.type(within(dialog).getByLabelText('MIG profile'), '3g.40gb');
    await user.type(within(dialog).getByLabelText('Price per hour'), '2');
    await user.click(within(dialog).getByRole('button', { name: 'Add tier' }));
    await waitFor(() => expect(api.callsTo('POST', `/api/v1/gpu-models/${MODEL_ID}/tiers`)).toHaveLength(2));
    expect(api.callsTo('POST', `/api/v1/gpu-models/${MODEL_ID}/tiers`)[1].body).toEqual({
      kind: 'mig',
      mig_profile: '3g.40gb',
      price_per_hour: '2',
    });
  });

  it('asks before retiring a tier and adds a model', async () => {
    const api = stubFetch({
      'GET /api/v1/me': superAdmin,
      'GET /api/v1/gpu-models': json(200, { items: [model] }),
      'DELETE /api/v1/tiers/t-quarter': json(204, null),
      'POST /api/v1/gpu-models': () => apiError(409, 'gpu_model_exists', 'A model with this name exists.'),
    });
    renderApp('/admin/tiers');
    const user = userEvent.setup();

    const quarter = (await screen.findByText('1/4')).closest('tr')!;
    await user.click(within(quarter).getByRole('button', { name: 'Retire' }));
    const confirm = await screen.findByRole('dialog', { name: 'Retire tier' });
    expect(api.callsTo('DELETE', '/api/v1/tiers/t-quarter')).toHaveLength(0);
    await user.click(within(confirm).getByRole('button', { name: 'Retire tier' }));
    await waitFor(() => expect(api.callsTo('DELETE', '/api/v1/tiers/t-quarter')).toHaveLength(1));

    await user.click(screen.getByRole('button', { name: 'Add GPU model' }));
    const dialog = await screen.findByRole('dialog', { name: 'Add GPU model' });
    await user.type(within(dialog).getByLabelText('Name'), 'A100-80GB');
    await user.type(within(dialog).getByLabelText('Exclusive price'), '4');
    await user.click(within(dialog).getByRole('button', { name: 'Add model' }));
    expect(await within(dialog).findByRole('alert')).toHaveTextContent('A model with this name exists.');
    expect(api.callsTo('POST', '/api/v1/gpu-models')[0].body).toEqual({
      name: 'A100-80GB',
      exclusive_price: '4',
      memory_mib: null,
      split_count: null,
    });
  });

  it('hides the page and its link from an admin without capacity rights', async () => {
    const orgAdmin: RoleGrantOut = {
      role: 'org_admin',
      org_id: '00000000-0000-4000-8000-0000000000b1',
      group_id: null,
      org_name: 'Research',
      group_name: null,
    };
    const api = stubFetch({
      'GET /api/v1/me': json(200, makeMe({}, [orgAdmin])),
      'GET /api/v1/orgs': json(200, emptyPage),
    });
    renderApp('/admin/tiers');

    expect(await screen.findByText('No organizations yet.')).toBeInTheDocument();
    expect(screen.queryByRole('link', { name: 'Tiers and prices' })).not.toBeInTheDocument();
    expect(screen.getByRole('link', { name: 'Policies' })).toBeInTheDocument();
    expect(screen.getByRole('link', { name: 'Queue' })).toBeInTheDocument();
    expect(api.callsTo('GET', '/api/v1/gpu-models')).toHaveLength(0);
  });
});
