import { AppsProjection } from './apps/apps-projection.ts';
import { CredentialsProjection } from './credentials/credentials-projection.ts';
import { GroupsProjection } from './groups/groups-projection.ts';
import { InvoicesProjection } from './invoices/invoices-projection.ts';
import type { Projection } from './projection.ts';
import { UsersProjection } from './users/users-projection.ts';

/** Every read model of a Relay process, fed by one projection runner. */
export interface ReadModels {
  readonly users: UsersProjection;
  readonly apps: AppsProjection;
  readonly credentials: CredentialsProjection;
  readonly groups: GroupsProjection;
  readonly invoices: InvoicesProjection;
  readonly all: readonly Projection[];
}

/**
 * The read models of a thread. `credentials: false` leaves the credentials out (the pipeline thread
 * of role `all`: only requests read keys, and the API thread holds them; 50,000 credentials were
 * about 30 MB of a heap): asking for them there throws, so that a part that starts to need them in
 * that thread fails its first test instead of finding no key.
 */
export const createReadModels = (options: { credentials?: boolean } = {}): ReadModels => {
  const users = new UsersProjection();
  const apps = new AppsProjection();
  const groups = new GroupsProjection();
  const invoices = new InvoicesProjection();
  if (options.credentials === false) {
    const all = [users, apps, groups, invoices];
    return {
      users,
      apps,
      groups,
      invoices,
      all,
      get credentials(): CredentialsProjection {
        throw new Error('The credentials read model is not kept in this thread: the API thread holds it');
      },
    };
  }
  const credentials = new CredentialsProjection();
  return { users, apps, credentials, groups, invoices, all: [users, apps, credentials, groups, invoices] };
};
