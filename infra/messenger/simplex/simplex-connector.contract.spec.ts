import { messengerConnectorContract } from '../../../test/contracts/messenger-connector.contract.ts';
import { groupAdministrationContract, type GroupFixture } from '../../../test/contracts/group-administration.contract.ts';
import { simplexFixture } from '../../../test/support/simplex-fixture.ts';

// On the protocol-faithful fake of simplex-chat (test/support/fake-simplex-chat.ts): simplex-chat
// cannot be installed here (docs/messengers.md).
messengerConnectorContract('SimpleX over simplex-chat WebSocket (fake daemon)', simplexFixture);

groupAdministrationContract('SimpleX over simplex-chat WebSocket (fake daemon)', async (): Promise<GroupFixture> => {
  const fixture = await simplexFixture();
  return {
    groups: fixture.connector.groups!,
    messenger: 'simplex',
    from: fixture.from,
    contacts: fixture.contacts,
    addedStatus: 'invited',
    inviteLinks: true,
    accept: async (groupId, contactId) => fixture.fake.acceptInvitation(Number(groupId), Number(contactId)),
    teardown: () => fixture.teardown(),
  };
});
