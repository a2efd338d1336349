import { screen, waitFor, within } from '@testing-library/react';
import userEvent from '@testing-library/user-event';
import { describe, expect, it } from 'vitest';
import type { RoleGrantOut, WalletTreeOut } from '../../api/types';
import { makeMe, makeWallet, SUPER_ADMIN } from '../../test/fixtures';
import { apiError, json, stubFetch } from '../../test/fetchStub';
import { renderApp } from '../../test/render';

const ORG_ID = '00000000-0000-4000-8000-0000000000b1';
const GROUP_ID = '00000000-0000-4000-8000-0000000000a1';
const ORG_ADMIN: RoleGrantOut = { role: 'org_admin', org_id: ORG_ID, group_id: null, org_name: 'Research', group_name: null };
const GROUP_ADMIN: RoleGrantOut = {
  role: 'group_admin',
  org_id: ORG_ID,
  group_id: GROUP_ID,
  org_name: 'Research',
  group_name: 'Optics',
};

const orgWallet = makeWallet({
  id: '00000000-0000-4000-8000-0000000000c1',
  owner_kind: 'org',
  owner_id: ORG_ID,
  owner_name: 'Research',
  balance: '5000',
  available: '5000',
});
const groupWallet = makeWallet({
  id: '00000000-0000-4000-8000-0000000000c2',
  owner_kind: 'group',
  owner_id: GROUP_ID,
  owner_name: 'Optics',
  balance: '10',
  available: '10',
  monthly_grant: { amount: '500', funding_wallet_id: orgWallet.id, last_refill: null },
});
const marie = makeWallet({
  id: '00000000-0000-4000-8000-0000000000c3',
  owner_kind: 'user',
  owner_id: '00000000-0000-4000-8000-000000000042',
  owner_name: 'Marie Curie',
  balance: '7.5',
  held: '2',
  available: '5.5',
});
const tree: WalletTreeOut = {
  org: orgWallet,
  groups: [{ group_id: GROUP_ID, group_name: 'Optics', wallet: groupWallet, members: [marie] }],
};
const TREE = `GET /api/v1/orgs/${ORG_ID}/wallet-tree`;
const ORGS = { 'GET /api/v1/orgs': json(200, { items: [{ id: ORG_ID, name: 'Research', created_at: '2025-01-01T00:00:00Z' }], next_cursor: null }) };

const transferOut = (amount: string) => ({
  transfer_id: '00000000-0000-4000-8000-0000000000d1',
  from_wallet: groupWallet,
  to_wallet: marie,
  amount,
  memo: null,
  at: '2026-11-29T10:00:00Z',
});

function rowOf(name: string): HTMLElement {
  const row = screen.getByRole('cell', { name }).closest('tr');
  if (!row) throw new Error(`No row for ${name}`);
  return row;
}

async function openTree(roles: RoleGrantOut[], routes: Parameters<typeof stubFetch>[0] = {}, csrf = 'csrf-from-me') {
  const api = stubFetch({
    'GET /api/v1/me': json(200, makeMe({ csrf_token: csrf }, roles)),
    ...ORGS,
    [TREE]: json(200, tree),
    ...routes,
  });
  renderApp('/admin/credits');
  expect(await screen.findByRole('cell', { name: 'Marie Curie' })).toBeInTheDocument();
  return api;
}

describe('credits admin', () => {
  it('is in the admin navigation and shows each wallet with its figures', async () => {
    await openTree([ORG_ADMIN]);

    expect(screen.getByRole('heading', { name: 'Credits' })).toBeInTheDocument();
    expect(screen.getByRole('link', { name: 'Credits' })).toHaveAttribute('href', '/admin/credits');
    expect(rowOf('Research')).toHaveTextContent('5,000');
    expect(rowOf('Optics')).toHaveTextContent('500 / month');
    const row = within(rowOf('Marie Curie'));
    expect(row.getByRole('cell', { name: '7.50' })).toBeInTheDocument();
    expect(row.getByRole('cell', { name: '2.00' })).toBeInTheDocument();
    expect(row.getByRole('cell', { name: '5.50' })).toBeInTheDocument();
  });

  it('shows Mint and Check ledger to the super admin only', async () => {
    await openTree([SUPER_ADMIN]);
    expect(within(rowOf('Research')).getByRole('button', { name: 'Mint' })).toBeInTheDocument();
    expect(within(rowOf('Research')).getByRole('button', { name: 'Set monthly grant' })).toBeInTheDocument();
    expect(screen.getByRole('button', { name: 'Check ledger' })).toBeInTheDocument();
  });

  it('hides Mint, Check ledger and the organization grant from an org admin', async () => {
    await openTree([ORG_ADMIN]);
    expect(screen.queryByRole('button', { name: 'Mint' })).not.toBeInTheDocument();
    expect(screen.queryByRole('button', { name: 'Check ledger' })).not.toBeInTheDocument();
    expect(within(rowOf('Research')).queryByRole('button')).not.toBeInTheDocument();
    expect(within(rowOf('Optics')).getByRole('button', { name: 'Allocate' })).toBeInTheDocument();
    expect(within(rowOf('Optics')).getByRole('button', { name: 'Set monthly grant' })).toBeInTheDocument();
  });

  it('gives a group admin only the actions between their group and its members', async () => {
    stubFetch({
      'GET /api/v1/me': json(200, makeMe({}, [GROUP_ADMIN])),
      ...ORGS,
      [TREE]: json(200, { ...tree, org: null }),
    });
    renderApp('/admin/credits');

    expect(await screen.findByRole('cell', { name: 'Marie Curie' })).toBeInTheDocument();
    expect(screen.queryByRole('cell', { name: 'Research' })).not.toBeInTheDocument();
    expect(within(rowOf('Optics')).queryByRole('button')).not.toBeInTheDocument();
    const member = within(rowOf('Marie Curie'));
    for (const name of ['Allocate', 'Take back', 'Set monthly grant']) {
      expect(member.getByRole('button', { name })).toBeInTheDocument();
    }
  });

  it('confirms an allocation by amount and both names, sends it with an idempotency key, and shows a refusal', async () => {
    const api = await openTree([GROUP_ADMIN], {
      'POST /api/v1/credits/transfers': apiError(409, 'insufficient_credits', 'Optics has only 10 credits available.'),
    }, 'csrf-admin');
    const user = userEvent.setup();

    await user.click(within(rowOf('Marie Curie')).getByRole('button', { name: 'Allocate' }));
    const dialog = await screen.findByRole('dialog', { name: 'Allocate credits' });
    expect(dialog).toHaveTextContent('10 available in Optics.');

    await user.type(within(dialog).getByLabelText('Amount'), '1.1234567');
    await user.click(within(dialog).getByRole('button', { name: 'Review' }));
    expect(within(dialog).getByText('Use at most 6 decimals.')).toBeInTheDocument();

    // More than the source has available is refused on the field, before Confirm.
    await user.clear(within(dialog).getByLabelText('Amount'));
    await user.type(within(dialog).getByLabelText('Amount'), '25');
    await user.type(within(dialog).getByLabelText('Memo'), 'Beam time');
    await user.click(within(dialog).getByRole('button', { name: 'Review' }));
    expect(within(dialog).getByText('More than can move: Optics has 10 credits available.')).toBeInTheDocument();
    expect(within(dialog).getByLabelText('Amount')).toHaveValue('25');

    // A memo over the server's limit is refused whole, not cut.
    await user.clear(within(dialog).getByLabelText('Amount'));
    await user.type(within(dialog).getByLabelText('Amount'), '8');
    await user.clear(within(dialog).getByLabelText('Memo'));
    await user.click(within(dialog).getByLabelText('Memo'));
    await user.paste('m'.repeat(501));
    await user.click(within(dialog).getByRole('button', { name: 'Review' }));
    expect(within(dialog).getByText('Use at most 500 characters.')).toBeInTheDocument();
    await user.clear(within(dialog).getByLabelText('Memo'));
    await user.type(within(dialog).getByLabelText('Memo'), 'Beam time');
    await user.click(within(dialog).getByRole('button', { name: 'Review' }));

    // The server may still refuse: someone may have moved credits since the tree was read.
    expect(within(dialog).getByText('Allocate 8 credits from Optics to Marie Curie?')).toBeInTheDocument();
    expect(api.callsTo('POST', '/api/v1/credits/transfers')).toHaveLength(0);
    await user.click(within(dialog).getByRole('button', { name: 'Confirm' }));

    expect(await within(dialog).findByRole('alert')).toHaveTextContent('Optics has only 10 credits available.');
    const [sent] = api.callsTo('POST', '/api/v1/credits/transfers');
    expect(sent.body).toEqual({
      from_wallet_id: groupWallet.id,
      to_wallet_id: marie.id,
      amount: '8',
      memo: 'Beam time',
    });
    expect(sent.headers.get('Idempotency-Key')).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(sent.headers.get('X-CSRF-Token')).toBe('csrf-admin');

    // Nothing was moved, so trying again is a new attempt under a new key.
    await user.click(within(dialog).getByRole('button', { name: 'Confirm' }));
    await waitFor(() => expect(api.callsTo('POST', '/api/v1/credits/transfers')).toHaveLength(2));
    const retried = api.callsTo('POST', '/api/v1/credits/transfers')[1];
    expect(retried.headers.get('Idempotency-Key')).not.toBe(sent.headers.get('Idempotency-Key'));
  });

  it('retries an unanswered action with the same key, then refreshes the tree and reports success', async () => {
    let attempts = 0;
    const api = await openTree([ORG_ADMIN], {
      'POST /api/v1/credits/transfers': () =>
        ++attempts === 1 ? apiError(503, 'unavailable', 'Try again shortly.') : json(201, transferOut('25')),
    });
    const user = userEvent.setup();

    await user.click(within(rowOf('Marie Curie')).getByRole('button', { name: 'Take back' }));
    const dialog = await screen.findByRole('dialog', { name: 'Take back credits' });
    await user.type(within(dialog).getByLabelText('Amount'), '2.5');
    await user.click(within(dialog).getByRole('button', { name: 'Review' }));
    expect(within(dialog).getByText('Take back 2.5 credits from Marie Curie to Optics?')).toBeInTheDocument();
    await user.click(within(dialog).getByRole('button', { name: 'Confirm' }));

    expect(await screen.findByText('Took back 2.5 credits from Marie Curie to Optics.', {}, { timeout: 4000 })).toBeInTheDocument();
    const calls = api.callsTo('POST', '/api/v1/credits/transfers');
    expect(calls).toHaveLength(2);
    expect(calls[0].body).toEqual({ from_wallet_id: marie.id, to_wallet_id: groupWallet.id, amount: '2.5', memo: null });
    expect(calls[1].headers.get('Idempotency-Key')).toBe(calls[0].headers.get('Idempotency-Key'));
    await waitFor(() => expect(api.callsTo('GET', `/api/v1/orgs/${ORG_ID}/wallet-tree`)).toHaveLength(2));

    // The next action is a new one, with a new key.
    await user.click(within(rowOf('Marie Curie')).getByRole('button', { name: 'Allocate' }));
    const again = await screen.findByRole('dialog', { name: 'Allocate credits' });
    await user.type(within(again).getByLabelText('Amount'), '2.5');
    await user.click(within(again).getByRole('button', { name: 'Review' }));
    await user.click(within(again).getByRole('button', { name: 'Confirm' }));
    await waitFor(() => expect(api.callsTo('POST', '/api/v1/credits/transfers')).toHaveLength(3));
    const third = api.callsTo('POST', '/api/v1/credits/transfers')[2];
    expect(third.headers.get('Idempotency-Key')).not.toBe(calls[0].headers.get('Idempotency-Key'));
  });

  it('mints into the organization and sets a member grant paid by the group', async () => {
    const api = await openTree([SUPER_ADMIN], {
      'POST /api/v1/credits/mint': json(201, { ...transferOut('1000'), from_wallet: orgWallet, to_wallet: orgWallet }),
      [`PUT /api/v1/wallets/${marie.id}/monthly-grant`]: json(200, marie),
    });
    const user = userEvent.setup();

    await user.click(within(rowOf('Research')).getByRole('button', { name: 'Mint' }));
    let dialog = await screen.findByRole('dialog', { name: 'Mint credits' });
    await user.type(within(dialog).getByLabelText('Amount'), '1000');
    await user.click(within(dialog).getByRole('button', { name: 'Review' }));
    expect(within(dialog).getByText('Mint 1,000 credits into Research?')).toBeInTheDocument();
    await user.click(within(dialog).getByRole('button', { name: 'Confirm' }));
    expect(await screen.findByText('Minted 1,000 credits into Research.')).toBeInTheDocument();
    const [mint] = api.callsTo('POST', '/api/v1/credits/mint');
    expect(mint.body).toEqual({ org_id: ORG_ID, amount: '1000', memo: null });
    expect(mint.headers.get('Idempotency-Key')).toBeTruthy();

    await user.click(within(rowOf('Marie Curie')).getByRole('button', { name: 'Set monthly grant' }));
    dialog = await screen.findByRole('dialog', { name: 'Set monthly grant' });
    expect(within(dialog).queryByLabelText('Memo')).not.toBeInTheDocument();
    await user.type(within(dialog).getByLabelText('Amount'), '40');
    await user.click(within(dialog).getByRole('button', { name: 'Review' }));
    expect(within(dialog).getByText('Set the monthly grant of Marie Curie to 40 credits, paid from Optics?')).toBeInTheDocument();
    await user.click(within(dialog).getByRole('button', { name: 'Confirm' }));
    expect(await screen.findByText('The monthly grant of Marie Curie is now 40 credits.')).toBeInTheDocument();
    const [grant] = api.callsTo('PUT', `/api/v1/wallets/${marie.id}/monthly-grant`);
    expect(grant.body).toEqual({ amount: '40', funding_wallet_id: groupWallet.id });
    expect(grant.headers.get('Idempotency-Key')).toBeTruthy();
  });

  it('checks the ledger and lists what is wrong', async () => {
    await openTree([SUPER_ADMIN], {
      'GET /api/v1/credits/check': json(200, {
        ok: false,
        checked_at: '2026-11-29T10:00:00Z',
        violations: [{ invariant: 'conservation', detail: 'Minted exceeds wallets, holds and usage by 0.5.' }],
        not_checked: ['no hold is left open for a session that has ended'],
        minted: '10000',
        in_wallets: '9000',
        held: '499.5',
        consumed: '500',
      }),
    });
    const user = userEvent.setup();

    await user.click(screen.getByRole('button', { name: 'Check ledger' }));
    const report = await screen.findByRole('region', { name: 'Ledger check' });
    expect(await within(report).findByText(/found 1 problem/)).toBeInTheDocument();
    expect(report).toHaveTextContent('conservation: Minted exceeds wallets, holds and usage by 0.5.');
    expect(report).toHaveTextContent('10,000');
    expect(report).toHaveTextContent('499.5');
  });
});
