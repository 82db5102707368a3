import { limitStoreContract } from '../../test/contracts/limit-store.contract.ts';
import { MemoryLimitStore } from './memory-limit-store.ts';

limitStoreContract('memory', async () => {
  const store = new MemoryLimitStore();
  return { store, teardown: () => store.close() };
});
