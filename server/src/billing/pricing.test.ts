import t from 'tap'
import { chargeLines, priceCharge, type ChargeLine } from './pricing.js'

const base = (amount: number): ChargeLine => ({ kind: 'base', description: 'Membership', amount })

t.test("BILLING.md's two examples", async (t) => {
  const a = priceCharge([base(10000)], [{ name: 'Service', rate: 1000 }], [{ name: 'VAT', rate: 2100, inclusive: false }])
  t.match(a, { subtotal: 10000, fees: [{ amount: 1000 }], taxable: 11000, taxes: [{ amount: 2310 }], total: 13310 })
  const b = priceCharge([base(1250)], [{ name: 'Service', rate: 500 }], [{ name: 'VAT', rate: 2100, inclusive: false }])
  t.match(b, { fees: [{ amount: 63 }], taxable: 1313, taxes: [{ amount: 276 }], total: 1589 })
})

t.test('a pricing table: lines, several fees, exclusive and inclusive taxes', async (t) => {
  const rows: Array<{
    name: string
    lines: ChargeLine[]
    fees: Array<{ name: string; rate: number }>
    taxes: Array<{ name: string; rate: number; inclusive: boolean }>
    want: { subtotal: number; fees: number[]; taxes: number[]; total: number }
  }> = [
    { name: 'no fees, no taxes', lines: [base(4999)], fees: [], taxes: [], want: { subtotal: 4999, fees: [], taxes: [], total: 4999 } },
    {
      name: 'initiation fee, two additional members and a custom fee add to the subtotal',
      lines: [
        base(5000),
        { kind: 'initiation_fee', description: 'Initiation', amount: 2500 },
        { kind: 'additional_member_fee', description: 'Ann', amount: 1000 },
        { kind: 'additional_member_fee', description: 'Bob', amount: 1000 },
        { kind: 'custom_fee', description: 'Locker', amount: 333 }
      ],
      fees: [{ name: 'Service', rate: 250 }],
      taxes: [{ name: 'VAT', rate: 2100, inclusive: false }],
      // 98.33; fee 2.45825 -> 2.46; taxable 100.79; VAT 21.1659 -> 21.17; total 121.96
      want: { subtotal: 9833, fees: [246], taxes: [2117], total: 12196 }
    },
    {
      name: 'several fees, each on the subtotal, each rounded',
      lines: [base(1999)],
      fees: [
        { name: 'Service', rate: 350 },
        { name: 'Card', rate: 125 }
      ],
      taxes: [],
      // 69.965 -> 0.70, 24.9875 -> 0.25
      want: { subtotal: 1999, fees: [70, 25], taxes: [], total: 2094 }
    },
    {
      name: 'an inclusive tax never changes the total',
      lines: [base(12100)],
      fees: [],
      taxes: [{ name: 'VAT', rate: 2100, inclusive: true }],
      want: { subtotal: 12100, fees: [], taxes: [2100], total: 12100 }
    },
    {
      name: 'two inclusive taxes share the net amount',
      lines: [base(11500)],
      fees: [],
      taxes: [
        { name: 'State', rate: 1000, inclusive: true },
        { name: 'City', rate: 500, inclusive: true }
      ],
      // net 100.00: 10.00 and 5.00
      want: { subtotal: 11500, fees: [], taxes: [1000, 500], total: 11500 }
    },
    {
      name: 'an exclusive tax beside an inclusive one is levied on the net, not on the other tax',
      lines: [base(12100)],
      fees: [],
      taxes: [
        { name: 'VAT', rate: 2100, inclusive: true },
        { name: 'Levy', rate: 100, inclusive: false }
      ],
      want: { subtotal: 12100, fees: [], taxes: [2100, 100], total: 12200 }
    },
    {
      name: 'a fee of 100% and a tax of 0%',
      lines: [base(1000)],
      fees: [{ name: 'Double', rate: 10000 }],
      taxes: [{ name: 'Zero', rate: 0, inclusive: false }],
      want: { subtotal: 1000, fees: [1000], taxes: [0], total: 2000 }
    },
    { name: 'a free plan is zero everywhere', lines: [base(0)], fees: [{ name: 'Service', rate: 500 }], taxes: [{ name: 'VAT', rate: 2100, inclusive: false }], want: { subtotal: 0, fees: [0], taxes: [0], total: 0 } }
  ]
  for (const row of rows) {
    const priced = priceCharge(row.lines, row.fees, row.taxes)
    t.same(
      { subtotal: priced.subtotal, fees: priced.fees.map((f) => f.amount), taxes: priced.taxes.map((x) => x.amount), total: priced.total },
      row.want,
      row.name
    )
  }
})

t.test('refuses what is not a price', async (t) => {
  t.throws(() => priceCharge([base(12.5)], [], []), /whole, non-negative/)
  t.throws(() => priceCharge([base(-1)], [], []), /whole, non-negative/)
  t.throws(() => priceCharge([base(1)], [{ name: 'Too much', rate: 10001 }], []), /between 0 and 100%/)
  t.throws(() => priceCharge([base(1)], [], [{ name: 'Negative', rate: -1, inclusive: false }]), /between 0 and 100%/)
})

t.test("a membership charge's lines: the initiation fee on the first charge only, each added member's fees on renewals", async (t) => {
  const plan = { chargeType: 'MONTHLY', displayName: 'Gold' }
  const amounts = { priceMinor: 5000, initiationFeeMinor: 2500, additionalMemberFeeMinor: 1000 }
  const kinds = (lines: ChargeLine[]) => lines.map((l) => `${l.kind}:${l.amount}`)
  t.same(kinds(chargeLines(plan, amounts, { first: true })), ['base:5000', 'initiation_fee:2500'])
  const members = [{ name: 'Ana', customFeeMinor: 300 }, { name: 'Bo', customFeeMinor: 0 }]
  t.same(kinds(chargeLines(plan, amounts, { first: false, members })), ['base:5000', 'additional_member_fee:1000', 'custom_fee:300', 'additional_member_fee:1000'])
  t.same(chargeLines({ ...plan, chargeType: 'FREE' }, amounts, { first: true }), [], 'a FREE plan charges nothing')
})
