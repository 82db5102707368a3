#!/usr/bin/env bash
# A private Monero chain on loopback, for development and tests: monerod in regtest mode, the
# merchant's watch-only wallet (what Relay watches: no spend key in that process) and a customer
# wallet that pays, each a monero-wallet-rpc on 127.0.0.1. From Debian's `monero` package, which
# start installs when it is missing (apt-get update first; as root, or through sudo -n).
#
#   scripts/monero-local.sh start|stop|status|env|reset
#
#   start   idempotent: starts what is not running, creates the wallets at the first start, mines
#           MONERO_INITIAL_BLOCKS to the customer (its coinbase unlocks after 60 blocks and a
#           transfer needs decoys: fewer than ~76 gives "not enough outputs"), and prints on stdout,
#           one KEY=VALUE a line, everything Relay needs to bill on this chain (PAYMENT_PROCESSOR=monero,
#           BILLING_RATE, MONERO_WALLET_RPC_URL, MONERO_NETWORK, MONERO_ACCOUNT_INDEX) and what tests
#           need (MONERO_DAEMON_RPC_URL for generateblocks and /pop_blocks,
#           MONERO_CUSTOMER_WALLET_RPC_URL, the two addresses). `set -a; eval "$(npm run -s
#           monero:start)"; set +a` puts them in a shell's environment, and `npm start` there bills.
#   stop    stops the three processes (wallets saved first); the chain and the wallets stay, and the
#           next start goes on with them (monerod --keep-fakechain).
#   status  one line each; exit 0 when all three answer, 3 otherwise.
#   env     prints the KEY=VALUE lines again (nothing is started).
#   reset   stop, then delete the state directory (a new chain and new wallets at the next start).
#
# Environment (all optional):
#   MONERO_DAEMON_PORT     monerod's RPC port (default 18191)
#   MONERO_P2P_PORT        monerod's p2p port, bound on loopback though --offline uses no peers
#                          (default MONERO_DAEMON_PORT - 1)
#   MONERO_MERCHANT_PORT   the merchant's wallet RPC (default MONERO_DAEMON_PORT + 1)
#   MONERO_CUSTOMER_PORT   the customer's wallet RPC (default MONERO_DAEMON_PORT + 2)
#   MONERO_LOCAL_DIR       chain, wallets, logs and pids (default ~/.cache/relay-monero/node-<daemon port>)
#   MONERO_INITIAL_BLOCKS  blocks the customer is mined at the first start (default 120)
#   BILLING_RATE           the price of one XMR it prints for Relay (default 150: a made-up
#                          price, this chain's coins are worth nothing)
#
# Layout of MONERO_LOCAL_DIR: chain/ (monerod), merchant-wallets/ (only the watch-only wallet
# `merchant`), customer-wallets/ (`customer`, and `merchant-full`: the merchant's spending wallet,
# which never enters the merchant's process; it is what an operator would keep offline), ring/,
# logs/, merchant.env (address and view key of the merchant), merchant-rpc-login (the merchant
# wallet RPC's digest login, generated at the first start), *.pid.
set -euo pipefail

daemon_port="${MONERO_DAEMON_PORT:-18191}"
p2p_port="${MONERO_P2P_PORT:-$((daemon_port - 1))}"
merchant_port="${MONERO_MERCHANT_PORT:-$((daemon_port + 1))}"
customer_port="${MONERO_CUSTOMER_PORT:-$((daemon_port + 2))}"
dir="${MONERO_LOCAL_DIR:-$HOME/.cache/relay-monero/node-$daemon_port}"
initial_blocks="${MONERO_INITIAL_BLOCKS:-120}"
logs="$dir/logs"
host=127.0.0.1

script_name=monero-local
# shellcheck source=local-chain.sh
source "$(dirname "${BASH_SOURCE[0]}")/local-chain.sh"

# ---------------------------------------------------------------------------------------------
# Installation (exit 4 when the package cannot be had: the test setup tells that apart)

install_monero() {
  local missing=()
  have monerod monero-wallet-rpc || missing+=(monero)
  have curl || missing+=(curl)
  [[ ${#missing[@]} -eq 0 ]] && return 0
  install_packages "Monero's monerod and monero-wallet-rpc" "${missing[@]}"
  have monerod monero-wallet-rpc || {
    say "the monero package did not provide monerod and monero-wallet-rpc"
    exit 4
  }
}

# ---------------------------------------------------------------------------------------------
# JSON-RPC over curl; answers are read with Node (there whenever Relay is)

merchant_login() { cat "$dir/merchant-rpc-login"; }

# rpc PORT METHOD [PARAMS_JSON] -> the answer's body on stdout; fails when the server does not answer
rpc() {
  local port="$1" method="$2" params="${3:-{\}}" auth=()
  [[ "$port" == "$merchant_port" && -f "$dir/merchant-rpc-login" ]] && auth=(--digest -u "$(merchant_login)")
  curl -sS --fail --max-time "${RPC_TIMEOUT:-60}" "${auth[@]}" -H 'content-type: application/json' \
    -d "{\"jsonrpc\":\"2.0\",\"id\":\"0\",\"method\":\"$method\",\"params\":$params}" "http://$host:$port/json_rpc"
}

# rpc_result PORT METHOD [PARAMS] [EXPRESSION on result]: fails with the wallet's message on an error answer
rpc_result() {
  local answer
  answer="$(rpc "$1" "$2" "${3:-{\}}")" || return 1
  local error
  error="$(json 'j.error ? `${j.error.code} ${j.error.message}` : ""' <<<"$answer")"
  if [[ -n "$error" ]]; then
    say "$2 on port $1 answered error $error"
    return 1
  fi
  json "${4:-j.result}" <<<"$answer"
}

# ---------------------------------------------------------------------------------------------
# Processes

# pid_of NAME: the pid in NAME.pid if that process runs and is the expected program
pid_of() {
  local file="$dir/$1.pid" program
  [[ -f "$file" ]] || return 1
  local pid
  pid="$(cat "$file")"
  [[ -n "$pid" ]] && kill -0 "$pid" 2>/dev/null || return 1
  program="$(cat "/proc/$pid/comm" 2>/dev/null || ps -p "$pid" -o comm= 2>/dev/null || true)"
  case "$1" in
    daemon) [[ "$program" == monerod* ]] || return 1 ;;
    *) [[ "$program" == monero-wallet* ]] || return 1 ;;
  esac
  echo "$pid"
}

# Readiness is read from what the servers answer, not from their exit status.
daemon_answers() {
  local answer
  answer="$(RPC_TIMEOUT=3 rpc "$daemon_port" get_info 2>/dev/null)" || return 1
  [[ "$(json 'j.result && j.result.status === "OK" && j.result.nettype === "fakechain" ? "yes" : "no"' <<<"$answer" 2>/dev/null)" == yes ]]
}

wallet_answers() {
  local answer
  answer="$(RPC_TIMEOUT=3 rpc "$1" get_version 2>/dev/null)" || return 1
  [[ "$(json 'j.result && Number.isInteger(j.result.version) ? "yes" : "no"' <<<"$answer" 2>/dev/null)" == yes ]]
}

# wallet_open PORT: some wallet file is open in that process (get_address answers with an address)
wallet_open() {
  local answer
  answer="$(RPC_TIMEOUT=5 rpc "$1" get_address '{"account_index":0}' 2>/dev/null)" || return 1
  [[ -n "$(json 'j.result && j.result.address' <<<"$answer" 2>/dev/null)" ]]
}

# wait_for NAME CHECK...: until CHECK succeeds, while the process just started for NAME runs (60 s
# at most)
wait_for() {
  local name="$1" pid since
  shift
  pid="$(cat "$dir/$name.pid")"
  since="$(date -u '+%F %T')"
  for _ in $(seq 1 240); do
    if ! still_running "$pid"; then
      say "$name exited (started at $since UTC; the log holds earlier starts too); the end of its log:"
      tail -n 30 "$logs/$name.log" "$logs/$name.out" >&2 2>/dev/null || true
      exit 1
    fi
    "$@" && return 0
    sleep 0.25
  done
  fail "$name not ready after 60 s; see $logs/$name.log"
}

start_daemon() {
  if pid_of daemon >/dev/null && daemon_answers; then return; fi
  pid_of daemon >/dev/null && fail "monerod (pid $(pid_of daemon)) runs but does not answer on $host:$daemon_port"
  say "starting monerod (regtest) on $host:$daemon_port"
  # --keep-fakechain: the chain (and so the wallets' payments) survives a stop and start.
  nohup monerod --regtest --keep-fakechain --offline --fixed-difficulty 1 --data-dir "$dir/chain" \
    --rpc-bind-ip "$host" --rpc-bind-port "$daemon_port" --p2p-bind-ip "$host" --p2p-bind-port "$p2p_port" \
    --no-zmq --no-igd --rpc-ssl disabled --disable-dns-checkpoints --non-interactive \
    --log-file "$logs/daemon.log" --max-log-files 2 </dev/null >"$logs/daemon.out" 2>&1 9>&- &
  echo $! >"$dir/daemon.pid"
  wait_for daemon daemon_answers
}

# start_wallet NAME PORT [LOGIN]
start_wallet() {
  local name="$1" port="$2" login="${3:-}"
  if pid_of "$name" >/dev/null && wallet_answers "$port"; then return; fi
  pid_of "$name" >/dev/null && fail "the $name wallet (pid $(pid_of "$name")) runs but does not answer on $host:$port"
  say "starting the $name wallet RPC on $host:$port"
  mkdir -p "$dir/$name-wallets"
  local auth=(--disable-rpc-login)
  [[ -n "$login" ]] && auth=(--rpc-login "$login")
  nohup monero-wallet-rpc --daemon-address "$host:$daemon_port" --trusted-daemon \
    --rpc-bind-ip "$host" --rpc-bind-port "$port" "${auth[@]}" --rpc-ssl disabled --daemon-ssl disabled \
    --wallet-dir "$dir/$name-wallets" --shared-ringdb-dir "$dir/ring" --non-interactive \
    --log-file "$logs/$name.log" --max-log-files 2 </dev/null >"$logs/$name.out" 2>&1 9>&- &
  echo $! >"$dir/$name.pid"
  wait_for "$name" wallet_answers "$port"
}

# The customer's process makes the merchant's full wallet once (and keeps it in its own wallet
# directory): only the address and the view key go to the merchant's process.
make_merchant_keys() {
  [[ -f "$dir/merchant.env" ]] && return
  say "creating the merchant's wallet"
  rpc_result "$customer_port" close_wallet >/dev/null 2>&1 || true
  if [[ -f "$dir/customer-wallets/merchant-full.keys" ]]; then
    rpc_result "$customer_port" open_wallet '{"filename":"merchant-full","password":""}' >/dev/null
  else
    rpc_result "$customer_port" create_wallet '{"filename":"merchant-full","password":"","language":"English"}' >/dev/null
  fi
  local address view_key
  address="$(rpc_result "$customer_port" get_address '{"account_index":0}' 'j.result.address')"
  view_key="$(rpc_result "$customer_port" query_key '{"key_type":"view_key"}' 'j.result.key')"
  [[ -n "$address" && -n "$view_key" ]] || fail "could not read the merchant's address and view key"
  rpc_result "$customer_port" close_wallet >/dev/null
  (umask 077 && printf 'MERCHANT_ADDRESS=%s\nMERCHANT_VIEW_KEY=%s\n' "$address" "$view_key" >"$dir/merchant.env.tmp")
  mv "$dir/merchant.env.tmp" "$dir/merchant.env"
}

open_customer() {
  if wallet_open "$customer_port" && [[ "$(rpc_result "$customer_port" get_address '{"account_index":0}' 'j.result.address')" == "$(customer_address_on_file)" ]]; then return; fi
  rpc_result "$customer_port" close_wallet >/dev/null 2>&1 || true
  if [[ -f "$dir/customer-wallets/customer.keys" ]]; then
    rpc_result "$customer_port" open_wallet '{"filename":"customer","password":""}' >/dev/null
  else
    say "creating the customer's wallet"
    rpc_result "$customer_port" create_wallet '{"filename":"customer","password":"","language":"English"}' >/dev/null
  fi
  rpc_result "$customer_port" get_address '{"account_index":0}' 'j.result.address' >"$dir/customer.address"
}

customer_address_on_file() { cat "$dir/customer.address" 2>/dev/null || true; }

open_merchant() {
  if wallet_open "$merchant_port"; then return; fi
  local address view_key
  address="$(sed -n 's/^MERCHANT_ADDRESS=//p' "$dir/merchant.env")"
  view_key="$(sed -n 's/^MERCHANT_VIEW_KEY=//p' "$dir/merchant.env")"
  if [[ -f "$dir/merchant-wallets/merchant.keys" ]]; then
    rpc_result "$merchant_port" open_wallet '{"filename":"merchant","password":""}' >/dev/null
  else
    say "creating the merchant's watch-only wallet"
    rpc_result "$merchant_port" generate_from_keys \
      "{\"filename\":\"merchant\",\"address\":\"$address\",\"viewkey\":\"$view_key\",\"password\":\"\",\"restore_height\":0,\"autosave_current\":true}" >/dev/null
  fi
  # It must not be able to spend: asking for its spend key has to fail.
  if rpc_result "$merchant_port" query_key '{"key_type":"spend_key"}' >/dev/null 2>&1; then
    fail "the merchant's wallet process holds a spend key: it must be watch-only"
  fi
}

daemon_height() { rpc_result "$daemon_port" get_info '{}' 'j.result.height'; }

mine_initial_blocks() {
  local height need
  height="$(daemon_height)"
  need=$((initial_blocks + 1 - height))
  if ((need > 0)); then
    say "mining $need blocks to the customer"
    RPC_TIMEOUT=300 rpc_result "$daemon_port" generateblocks "{\"amount_of_blocks\":$need,\"wallet_address\":\"$(customer_address_on_file)\"}" >/dev/null
  fi
  RPC_TIMEOUT=300 rpc_result "$customer_port" refresh >/dev/null
  local unlocked
  unlocked="$(rpc_result "$customer_port" get_balance '{"account_index":0}' 'String(j.result.unlocked_balance)')"
  [[ "$unlocked" =~ ^[1-9][0-9]*$ ]] || fail "the customer has no unlocked balance at height $(daemon_height)"
}

print_env() {
  [[ -f "$dir/merchant-rpc-login" && -f "$dir/merchant.env" ]] || fail "not started yet (no wallets in $dir)"
  echo "PAYMENT_PROCESSOR=monero"
  echo "BILLING_RATE=${BILLING_RATE:-150}"
  echo "MONERO_WALLET_RPC_URL=http://$(merchant_login)@$host:$merchant_port"
  echo "MONERO_NETWORK=regtest"
  echo "MONERO_ACCOUNT_INDEX=0"
  echo "MONERO_MERCHANT_ADDRESS=$(sed -n 's/^MERCHANT_ADDRESS=//p' "$dir/merchant.env")"
  echo "MONERO_DAEMON_RPC_URL=http://$host:$daemon_port"
  echo "MONERO_CUSTOMER_WALLET_RPC_URL=http://$host:$customer_port"
  echo "MONERO_CUSTOMER_ADDRESS=$(customer_address_on_file)"
  echo "MONERO_LOCAL_DIR=$dir"
}

start() {
  install_monero
  mkdir -p "$dir/chain" "$dir/ring" "$logs"
  if [[ ! -f "$dir/merchant-rpc-login" ]]; then
    (umask 077 && echo "relay:$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')" >"$dir/merchant-rpc-login")
  fi
  start_daemon
  start_wallet customer "$customer_port"
  make_merchant_keys
  open_customer
  start_wallet merchant "$merchant_port" "$(merchant_login)"
  open_merchant
  # Payments show within a second in the wallets themselves (Relay's adapter refreshes anyway).
  rpc_result "$customer_port" auto_refresh '{"enable":true,"period":1}' >/dev/null
  rpc_result "$merchant_port" auto_refresh '{"enable":true,"period":1}' >/dev/null
  mine_initial_blocks
  say "ready: chain height $(daemon_height), state in $dir"
  print_env
}

# stop_one NAME PORT: asks politely (the wallet saves itself), then TERM, then KILL
stop_one() {
  local name="$1" port="$2" pid
  pid="$(pid_of "$name")" || {
    rm -f "$dir/$name.pid"
    return
  }
  if [[ "$name" == daemon ]]; then
    curl -sS --max-time 5 -o /dev/null "http://$host:$port/stop_daemon" -d '{}' 2>/dev/null || true
  else
    RPC_TIMEOUT=5 rpc "$port" stop_wallet >/dev/null 2>&1 || true
  fi
  await_exit "$name" "$pid" 80 40
}

stop() {
  stop_one merchant "$merchant_port"
  stop_one customer "$customer_port"
  stop_one daemon "$daemon_port"
}

status() {
  local up=0
  if pid_of daemon >/dev/null && daemon_answers; then
    echo "monerod: running (pid $(pid_of daemon)) on $host:$daemon_port, height $(daemon_height)"
    up=$((up + 1))
  else
    echo "monerod: stopped"
  fi
  for wallet in merchant:$merchant_port customer:$customer_port; do
    local name="${wallet%%:*}" port="${wallet##*:}"
    if pid_of "$name" >/dev/null && wallet_answers "$port" && wallet_open "$port"; then
      echo "$name wallet: running (pid $(pid_of "$name")) on $host:$port"
      up=$((up + 1))
    else
      echo "$name wallet: stopped"
    fi
  done
  ((up == 3)) || exit 3
}

run_command "$@"
