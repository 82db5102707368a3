import { messengerConnectorContract } from '../../../test/contracts/messenger-connector.contract.ts';
import { simplexFixture } from '../../../test/support/simplex-fixture.ts';

// On the protocol-faithful fake of simplex-chat (test/support/fake-simplex-chat.ts): simplex-chat
// cannot be installed here (docs/messengers.md).
messengerConnectorContract('SimpleX over simplex-chat WebSocket (fake daemon)', simplexFixture);
