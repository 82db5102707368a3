import { describe, expect, it } from 'vitest';
import { newEventId } from '../event-store/port.ts';
import { newId } from './new-id.ts';

describe('ids', () => {
  it('gives message ids in the interface’s format: 32 lowercase hex characters', () => {
    // A UUIDv7 without its dashes: version 7, variant 10.
    for (let i = 0; i < 1000; i++) expect(newId.message()).toMatch(/^[0-9a-f]{12}7[0-9a-f]{3}[89ab][0-9a-f]{15}$/);
  });

  it('orders message, batch and event ids by creation, even within one millisecond', () => {
    for (const make of [newId.message, newId.batch, newEventId]) {
      const ids = Array.from({ length: 5000 }, make);
      expect(new Set(ids).size).toBe(ids.length);
      expect([...ids].sort()).toEqual(ids);
    }
  });

  it('gives batch and event ids as UUIDs of version 7', () => {
    expect(newId.batch()).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(newEventId()).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
  });
});
