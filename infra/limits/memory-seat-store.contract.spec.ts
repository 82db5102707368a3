import { seatStoreContract } from '../../test/contracts/seat-store.contract.ts';
import { MemorySeatStore } from './seats.ts';

seatStoreContract('memory', async () => {
  const store = new MemorySeatStore();
  return { store, teardown: () => store.close() };
});
