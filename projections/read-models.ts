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

export const createReadModels = (): ReadModels => {
  const users = new UsersProjection();
  const apps = new AppsProjection();
  const credentials = new CredentialsProjection();
  const groups = new GroupsProjection();
  const invoices = new InvoicesProjection();
  return { users, apps, credentials, groups, invoices, all: [users, apps, credentials, groups, invoices] };
};
