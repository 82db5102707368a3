import { messengerConnectorContract } from '../../../test/contracts/messenger-connector.contract.ts';
import { sessionFixture } from '../../../test/support/session-fixture.ts';

// On the fake swarm (test/support/fake-session-swarm.ts), with independent test clients as
// contacts (test/support/session-test-client.ts): no Session network can be reached here
// (docs/messengers.md). Relay's Session client has no groups: the contract's group cases are
// skipped, and session-connector.integration.spec.ts shows a group delivery failing permanently.
messengerConnectorContract('Session on Relay’s own client (fake swarm)', sessionFixture, { groups: false });
