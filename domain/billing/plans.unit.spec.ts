import { describe, expect, it } from 'vitest';
import { formatDecimal, parseDecimal } from './decimal.ts';
import { assetAmountOf, formatPrice, plansOf, purchasablePlan } from './plans.ts';

const prices = { currency: 'USD', paidMonthlyCents: 500n, annualDiscountPercent: 20 };

describe('plans and prices', () => {
  it('prices the year as twelve months less the discount, rounded up to the cent', () => {
    expect(plansOf(prices).map((p) => [p.id, p.tier, p.period, formatPrice(p.priceCents)])).toEqual([
      ['free', 'free', null, '0.00'],
      ['paid-monthly', 'paid', 'monthly', '5.00'],
      ['paid-annual', 'paid', 'annual', '48.00'],
    ]);
    expect(formatPrice(plansOf({ ...prices, paidMonthlyCents: 333n, annualDiscountPercent: 15 })[2]!.priceCents)).toBe('33.97');
  });

  it('sells only the paid plans', () => {
    expect(purchasablePlan(prices, 'paid-annual')?.period).toBe('annual');
    expect(purchasablePlan(prices, 'free')).toBeUndefined();
    expect(purchasablePlan(prices, 'gold')).toBeUndefined();
  });

  it('turns a price into atomic units of the asset at the operator rate, rounded up', () => {
    // 5.00 USD at 150.00 USD per XMR = 0.0333… XMR = 33,333,333,334 piconero (rounded up).
    expect(assetAmountOf(500n, { units: parseDecimal('150.00', 2)!, scale: 2 }, 12)).toBe(33_333_333_334n);
    expect(assetAmountOf(4800n, { units: parseDecimal('1', 8)!, scale: 8 }, 12)).toBe(48_000_000_000_000n);
    expect(formatDecimal(33_333_333_334n, 12)).toBe('0.033333333334');
  });

  it('reads decimals exactly, refusing what is not one', () => {
    expect(parseDecimal('5', 2)).toBe(500n);
    expect(parseDecimal('0.0125', 4)).toBe(125n);
    for (const bad of ['', '-1', '1e3', '1.234', 'abc', '1.']) expect(parseDecimal(bad, 2), bad).toBeUndefined();
  });
});
