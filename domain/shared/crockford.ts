/** Crockford's base32: digits and letters without I, L, O and U, which read as others. */
export const CROCKFORD_ALPHABET = '0123456789ABCDEFGHJKMNPQRSTVWXYZ';

/** A code as typed (any case, with or without dashes and spaces, O for 0, I or L for 1), as its canonical characters. */
export const normaliseCrockford = (typed: string): string => typed.toUpperCase().replace(/[\s-]/g, '').replace(/O/g, '0').replace(/[IL]/g, '1');

/** Canonical characters in groups of `size` joined by dashes, for reading aloud and typing (`ABCD-EFGH`). */
export const groupCode = (canonical: string, size: number): string => canonical.match(new RegExp(`.{1,${size}}`, 'g'))?.join('-') ?? '';
