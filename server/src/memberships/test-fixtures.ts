// A plan as the membership tests sell it: monthly, with an initiation fee, a fee and a tax.
export const monthlyPlan = {
  displayName: 'Adult monthly',
  type: 'BASIC_MEMBER',
  chargeType: 'MONTHLY',
  price: 49.9,
  initiationFee: 25,
  taxes: [{ name: 'VAT', percentage: 21 }],
  fees: [{ name: 'Service', percentage: 2.5 }]
}
