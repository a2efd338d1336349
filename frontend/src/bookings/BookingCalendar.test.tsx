import { screen, within } from '@testing-library/react';
import { describe, expect, it } from 'vitest';
import { json, stubFetch } from '../test/fetchStub';
import { renderUi } from '../test/renderUi';
import { BookingCalendar } from './BookingCalendar';
import { at, makeCalendar, makeResource, WEEK } from './testData';

const cellsOf = (rowHeader: string) => {
  const row = screen.getByRole('rowheader', { name: new RegExp(`^${rowHeader}`) }).closest('tr')!;
  return within(row).getAllByRole('cell');
};

describe('booking calendar', () => {
  it("shows each day's booked and free capacity of every resource, with the step times", async () => {
    const api = stubFetch({
      'GET /api/v1/bookings/calendar': json(
        200,
        makeCalendar([
          makeResource({}, { day: 1, from: '10:00', to: '12:00', count: 3 }),
          makeResource({ pool: 'mig', profile: '3g.40gb', unit: 'instances', capacity: 2 }, { day: 2, from: '14:00', to: '15:30', count: 2 }),
        ]),
      ),
    });
    renderUi(<BookingCalendar model="A100-80GB" weekStart={WEEK} now={new Date(at(1, '08:00')).getTime()} />);

    const table = await screen.findByRole('table', { name: 'Booked and free capacity of A100-80GB, 2 Mar to 8 Mar 2026' });
    const days = within(table).getAllByRole('columnheader').map((header) => header.textContent);
    expect(days).toEqual(['Resource', 'Mon 2 Mar', 'Tue 3 MarToday', 'Wed 4 Mar', 'Thu 5 Mar', 'Fri 6 Mar', 'Sat 7 Mar', 'Sun 8 Mar']);

    expect(screen.getByRole('rowheader', { name: 'Cards 8 cards' })).toBeInTheDocument();
    const cards = cellsOf('Cards');
    expect(cards).toHaveLength(7);
    expect(cards[0]).toHaveTextContent('All day8 free');
    expect(cards[1]).toHaveTextContent('00:00–10:008 free10:00–12:003 booked, 5 free12:00–24:008 free');
    expect(cards[2]).toHaveTextContent('All day8 free');

    const mig = cellsOf('MIG 3g.40gb');
    expect(screen.getByRole('rowheader', { name: 'MIG 3g.40gb 2 instances' })).toBeInTheDocument();
    expect(mig[1]).toHaveTextContent('All day2 free');
    expect(mig[2]).toHaveTextContent('14:00–15:302 booked, 0 free');

    // The week asked for is the one shown, from its Monday to the next, in the browser's time zone.
    const [asked] = api.callsTo('GET', '/api/v1/bookings/calendar');
    expect(asked.query.get('model')).toBe('A100-80GB');
    expect(asked.query.get('starts_at')).toBe(WEEK.toISOString());
    expect(asked.query.get('ends_at')).toBe(WEEK.add(7, 'day').toISOString());
  });

  it('says when more is booked than exists now', async () => {
    stubFetch({
      'GET /api/v1/bookings/calendar': json(200, makeCalendar([makeResource({ capacity: 2 }, { day: 4, from: '09:00', to: '10:00', count: 3 })])),
    });
    renderUi(<BookingCalendar model="A100-80GB" weekStart={WEEK} />);

    await screen.findByRole('table');
    expect(cellsOf('Cards')[4]).toHaveTextContent('09:00–10:003 booked, 1 over capacity');
  });
});
