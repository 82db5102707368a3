import { messengerConnectorContract } from '../../../test/contracts/messenger-connector.contract.ts';
import { groupAdministrationContract, type GroupFixture } from '../../../test/contracts/group-administration.contract.ts';
import { BOT, signalFixture } from '../../../test/support/signal-fixture.ts';

// On the protocol-faithful fake of signal-cli (test/support/fake-signal-cli.ts): sends and
// received messages need an account, which cannot be had here. The transports themselves are
// checked against the real daemon in signal-cli-transports.integration.spec.ts.
messengerConnectorContract('Signal over signal-cli HTTP (fake daemon)', () => signalFixture('http'));
messengerConnectorContract('Signal over signal-cli TCP (fake daemon)', () => signalFixture('tcp'));

const signalGroupsFixture = (transport: 'http' | 'tcp') => async (): Promise<GroupFixture> => {
  const fixture = await signalFixture(transport);
  return {
    groups: fixture.connector.groups!,
    messenger: 'signal',
    from: BOT,
    contacts: ['+15550100001', '+15550100002'],
    addedStatus: 'joined',
    inviteLinks: true,
    teardown: () => fixture.teardown(),
  };
};
groupAdministrationContract('Signal over signal-cli HTTP (fake daemon)', signalGroupsFixture('http'));
groupAdministrationContract('Signal over signal-cli TCP (fake daemon)', signalGroupsFixture('tcp'));
