import { messengerConnectorContract } from '../../../test/contracts/messenger-connector.contract.ts';
import { signalFixture } from '../../../test/support/signal-fixture.ts';

// On the protocol-faithful fake of signal-cli (test/support/fake-signal-cli.ts): sends and
// received messages need an account, which cannot be had here. The transports themselves are
// checked against the real daemon in signal-cli-transports.integration.spec.ts.
messengerConnectorContract('Signal over signal-cli HTTP (fake daemon)', () => signalFixture('http'));
messengerConnectorContract('Signal over signal-cli TCP (fake daemon)', () => signalFixture('tcp'));
