#!/usr/bin/env bash
# A private Litecoin chain on loopback, for development and tests of the Bitcoin-family adapter
# (infra/payment/bitcoin/): litecoind in regtest mode (Litecoin Core 0.21 speaks Bitcoin Core's
# RPC), from Debian's `litecoind` package, which start installs when it is missing (apt-get update
# first; as root, or through sudo -n).
#
#   scripts/litecoin-local.sh start|stop|status|env|reset
#
#   start   idempotent: starts litecoind if it is not running, creates the wallets at the first
#           start (loads them at later ones), mines LITECOIN_INITIAL_BLOCKS to the customer (a
#           coinbase can be spent after 100 blocks), and prints on stdout, one KEY=VALUE a line,
#           everything Relay needs to bill on this chain (PAYMENT_PROCESSOR=bitcoin, BITCOIN_RPC_URL:
#           the merchant's wallet, login included; BITCOIN_NETWORK, BITCOIN_ASSET=LTC, BILLING_RATE),
#           the same wallet as LITECOIN_RPC_URL and LITECOIN_NETWORK, and what tests need
#           (LITECOIN_CUSTOMER_RPC_URL, the customer's wallet, which pays and to which blocks are
#           mined; LITECOIN_CUSTOMER_ADDRESS). `set -a; eval "$(npm run -s litecoin:start)"; set +a`
#           puts them in a shell's environment, and `npm start` there bills.
#   stop    stops litecoind; the chain and the wallets stay, and the next start goes on with them.
#   status  one line; exit 0 when litecoind answers as a regtest node with both wallets loaded, 3 otherwise.
#   env     prints the KEY=VALUE lines again (nothing is started).
#   reset   stop, then delete the state directory (a new chain and new wallets at the next start).
#
# Environment (all optional):
#   LITECOIN_RPC_PORT        litecoind's RPC port (default 19491)
#   LITECOIN_P2P_PORT        its p2p port; nothing listens there (listen=0) (default RPC port + 1)
#   LITECOIN_LOCAL_DIR       chain, wallets, logs, pid (default ~/.cache/relay-litecoin/node-<rpc port>)
#   LITECOIN_INITIAL_BLOCKS  blocks the customer is mined at the first start (default 101)
#   BILLING_RATE             the price of one LTC it prints for Relay (default 150: a made-up
#                            price, this chain's coins are worth nothing)
#   LITECOIN_ADDRESS_BATCH   addresses imported into the merchant's watch-only wallet at a time
#                            (default 5000); start imports another batch when fewer than 1000 are left
#
# The merchant's wallet is watch-only: at the first start a `merchant-keys` wallet (with private
# keys) is made once, its master key read (dumpwallet) and turned into a public descriptor
# wpkh(tpub…/0/*) (getdescriptorinfo), and the wallet unloaded: it stays on disk, in
# chain/regtest/wallets/merchant-keys, as what an operator would keep offline. The `merchant`
# wallet (disable_private_keys) gets that descriptor's addresses in its keypool (importmulti
# keypool:true), so getnewaddress hands them out and getaddressinfo tells their derivation index
# (hdkeypath m/0/<index>). Index 0 is taken at creation as the wallet's main address.
#
# Layout of LITECOIN_LOCAL_DIR: chain/ (litecoind's -datadir: litecoin.conf, regtest/), logs/,
# rpc-password (generated at the first start), merchant.desc (the public descriptor),
# merchant.imported (how many addresses the merchant's wallet has imported), customer.address,
# litecoind.pid.
set -euo pipefail

rpc_port="${LITECOIN_RPC_PORT:-19491}"
p2p_port="${LITECOIN_P2P_PORT:-$((rpc_port + 1))}"
dir="${LITECOIN_LOCAL_DIR:-$HOME/.cache/relay-litecoin/node-$rpc_port}"
initial_blocks="${LITECOIN_INITIAL_BLOCKS:-101}"
batch="${LITECOIN_ADDRESS_BATCH:-5000}"
chain="$dir/chain"
logs="$dir/logs"
host=127.0.0.1
rpc_user=relay

script_name=litecoin-local
# shellcheck source=local-chain.sh
source "$(dirname "${BASH_SOURCE[0]}")/local-chain.sh"

# ---------------------------------------------------------------------------------------------
# Installation (exit 4 when the package cannot be had: the test setup tells that apart)

install_litecoind() {
  local missing=()
  have litecoind litecoin-cli || missing+=(litecoind)
  have node || fail "node is needed to read litecoind's answers"
  [[ ${#missing[@]} -eq 0 ]] && return 0
  install_packages "Litecoin Core's litecoind and litecoin-cli" "${missing[@]}"
  have litecoind litecoin-cli || {
    say "the litecoind package did not provide litecoind and litecoin-cli"
    exit 4
  }
}

# ---------------------------------------------------------------------------------------------
# RPC through litecoin-cli (it reads the port and the login from the same litecoin.conf)

rpc_password() { cat "$dir/rpc-password"; }

# cli [-rpcwallet=NAME] METHOD ARGS...: the answer on stdout; fails with litecoind's message on stderr
cli() { litecoin-cli -datadir="$chain" -rpcclienttimeout="${RPC_TIMEOUT:-120}" "$@"; }

write_conf() {
  mkdir -p "$chain"
  (
    umask 077
    cat >"$chain/litecoin.conf.tmp" <<EOF
# Written by scripts/litecoin-local.sh at each start.
regtest=1
server=1
listen=0
dnsseed=0
upnp=0
natpmp=0
fallbackfee=0.0001
rpcuser=$rpc_user
rpcpassword=$(rpc_password)
[regtest]
rpcbind=$host
rpcallowip=$host
rpcconnect=$host
rpcport=$rpc_port
port=$p2p_port
EOF
  )
  mv "$chain/litecoin.conf.tmp" "$chain/litecoin.conf"
}

# ---------------------------------------------------------------------------------------------
# The process

pid_of() {
  local file="$dir/litecoind.pid" pid program
  [[ -f "$file" ]] || return 1
  pid="$(cat "$file")"
  [[ -n "$pid" ]] && kill -0 "$pid" 2>/dev/null || return 1
  program="$(cat "/proc/$pid/comm" 2>/dev/null || ps -p "$pid" -o comm= 2>/dev/null || true)"
  [[ "$program" == litecoind* ]] || return 1
  echo "$pid"
}

# Readiness is read from what litecoind answers: a regtest chain, out of its warm-up.
node_answers() {
  local answer
  answer="$(RPC_TIMEOUT=3 cli getblockchaininfo 2>/dev/null)" || return 1
  [[ "$(json 'j.chain === "regtest" && Number.isInteger(j.blocks) ? "yes" : "no"' <<<"$answer" 2>/dev/null)" == yes ]]
}

start_node() {
  if pid_of >/dev/null && node_answers; then return; fi
  pid_of >/dev/null && fail "litecoind (pid $(pid_of)) runs but does not answer on $host:$rpc_port"
  say "starting litecoind (regtest) on $host:$rpc_port"
  nohup litecoind -datadir="$chain" -printtoconsole=0 -debuglogfile="$logs/debug.log" </dev/null >"$logs/litecoind.out" 2>&1 9>&- &
  echo $! >"$dir/litecoind.pid"
  local pid
  pid="$(cat "$dir/litecoind.pid")"
  for _ in $(seq 1 240); do
    if ! still_running "$pid"; then
      say "litecoind exited; the end of its log:"
      tail -n 30 "$logs/litecoind.out" "$logs/debug.log" >&2 2>/dev/null || true
      exit 1
    fi
    node_answers && return 0
    sleep 0.25
  done
  fail "litecoind not ready after 60 s; see $logs/debug.log"
}

loaded() { cli listwallets | json "j.includes('$1') ? 'yes' : 'no'"; }

# load_wallet NAME: loads it if it exists on disk and is not loaded; fails when it does not exist
load_wallet() {
  [[ "$(loaded "$1")" == yes ]] && return 0
  [[ -d "$chain/regtest/wallets/$1" ]] || return 1
  cli loadwallet "$1" >/dev/null
}

make_merchant_descriptor() {
  [[ -s "$dir/merchant.desc" ]] && return
  say "creating the merchant's keys"
  load_wallet merchant-keys || cli -named createwallet wallet_name=merchant-keys load_on_startup=false >/dev/null
  local dump="$dir/merchant-keys.dump" master descriptor
  rm -f "$dump"
  (umask 077 && cli -rpcwallet=merchant-keys dumpwallet "$dump" >/dev/null)
  master="$(sed -n 's/^# extended private masterkey: //p' "$dump")"
  rm -f "$dump"
  [[ "$master" == tprv* ]] || fail "could not read the merchant's master key"
  descriptor="$(cli getdescriptorinfo "wpkh($master/0/*)" | json 'j.descriptor')"
  [[ "$descriptor" == "wpkh(tpub"* ]] || fail "could not make the merchant's public descriptor"
  cli unloadwallet merchant-keys >/dev/null
  echo "$descriptor" >"$dir/merchant.desc"
}

# import_addresses FROM: the next batch of the descriptor's addresses into the merchant's keypool
import_addresses() {
  local from="$1" to=$(($1 + batch - 1))
  say "importing the merchant's addresses $from to $to (watch-only)"
  local answer
  answer="$(RPC_TIMEOUT=600 cli -rpcwallet=merchant importmulti \
    "[{\"desc\":\"$(cat "$dir/merchant.desc")\",\"range\":[$from,$to],\"timestamp\":\"now\",\"keypool\":true,\"watchonly\":true,\"internal\":false}]")"
  [[ "$(json 'j.every((r) => r.success) ? "yes" : "no"' <<<"$answer")" == yes ]] || fail "importmulti failed: $answer"
  echo $((to + 1)) >"$dir/merchant.imported"
}

open_merchant() {
  if ! load_wallet merchant; then
    say "creating the merchant's watch-only wallet"
    cli -named createwallet wallet_name=merchant disable_private_keys=true blank=true load_on_startup=true >/dev/null
    rm -f "$dir/merchant.imported"
  fi
  [[ "$(cli -rpcwallet=merchant getwalletinfo | json 'j.private_keys_enabled ? "yes" : "no"')" == no ]] ||
    fail "the merchant's wallet holds private keys: it must be watch-only"
  if [[ ! -f "$dir/merchant.imported" ]]; then
    import_addresses 0
    # Index 0: the wallet's main address, never an invoice's.
    cli -rpcwallet=merchant getnewaddress "relay main address" >/dev/null
  fi
  local left
  left="$(cli -rpcwallet=merchant getwalletinfo | json 'j.keypoolsize')"
  if ((left < 1000)); then import_addresses "$(cat "$dir/merchant.imported")"; fi
}

open_customer() {
  if ! load_wallet customer; then
    say "creating the customer's wallet"
    cli -named createwallet wallet_name=customer load_on_startup=true >/dev/null
    rm -f "$dir/customer.address"
  fi
  [[ -s "$dir/customer.address" ]] || cli -rpcwallet=customer getnewaddress customer >"$dir/customer.address"
}

height() { cli getblockcount; }

mine_initial_blocks() {
  local need=$((initial_blocks - $(height)))
  if ((need > 0)); then
    say "mining $need blocks to the customer"
    RPC_TIMEOUT=600 cli generatetoaddress "$need" "$(cat "$dir/customer.address")" >/dev/null
  fi
  local balance
  balance="$(cli -rpcwallet=customer getbalance)"
  [[ "$balance" =~ ^[0-9]+\.[0-9]+$ && ! "$balance" =~ ^0\.0+$ ]] || fail "the customer has nothing to spend at height $(height)"
}

print_env() {
  [[ -f "$dir/rpc-password" && -s "$dir/customer.address" ]] || fail "not started yet (no wallets in $dir)"
  echo "PAYMENT_PROCESSOR=bitcoin"
  echo "BITCOIN_RPC_URL=http://$rpc_user:$(rpc_password)@$host:$rpc_port/wallet/merchant"
  echo "BITCOIN_NETWORK=regtest"
  echo "BITCOIN_ASSET=LTC"
  echo "BILLING_RATE=${BILLING_RATE:-150}"
  echo "LITECOIN_RPC_URL=http://$rpc_user:$(rpc_password)@$host:$rpc_port/wallet/merchant"
  echo "LITECOIN_NETWORK=regtest"
  echo "LITECOIN_CUSTOMER_RPC_URL=http://$rpc_user:$(rpc_password)@$host:$rpc_port/wallet/customer"
  echo "LITECOIN_CUSTOMER_ADDRESS=$(cat "$dir/customer.address")"
  echo "LITECOIN_LOCAL_DIR=$dir"
}

start() {
  install_litecoind
  mkdir -p "$chain" "$logs"
  [[ -s "$dir/rpc-password" ]] || (umask 077 && od -An -N16 -tx1 /dev/urandom | tr -d ' \n' >"$dir/rpc-password")
  write_conf
  start_node
  make_merchant_descriptor
  open_merchant
  open_customer
  mine_initial_blocks
  say "ready: chain height $(height), state in $dir"
  print_env
}

stop() {
  local pid
  pid="$(pid_of)" || {
    rm -f "$dir/litecoind.pid"
    return 0
  }
  RPC_TIMEOUT=5 cli stop >/dev/null 2>&1 || true
  await_exit litecoind "$pid" 120 80
}

status() {
  if pid_of >/dev/null && node_answers && [[ "$(loaded merchant)" == yes && "$(loaded customer)" == yes ]]; then
    echo "litecoind: running (pid $(pid_of)) on $host:$rpc_port, height $(height), wallets merchant and customer loaded"
  else
    echo "litecoind: stopped"
    exit 3
  fi
}

run_command "$@"
