import protobuf from 'protobufjs';

/**
 * The subset of TRON's `core/Tron.proto` and `core/contract/{balance,smart}_contract.proto`
 * (tronprotocol/protocol) that TRX and TRC-20 transfers use, with the upstream field numbers.
 * Parsed once with protobufjs.
 */
const SCHEMA = `
syntax = "proto3";
package protocol;
message Any { string type_url = 1; bytes value = 2; }
message TransferContract { bytes owner_address = 1; bytes to_address = 2; int64 amount = 3; }
message TriggerSmartContract {
  bytes owner_address = 1; bytes contract_address = 2; int64 call_value = 3; bytes data = 4;
  int64 call_token_value = 5; int64 token_id = 6;
}
message Contract {
  int32 type = 1;
  Any parameter = 2;
  bytes provider = 3;
  bytes ContractName = 4;
  int32 Permission_id = 5;
}
message TransactionRaw {
  bytes ref_block_bytes = 1;
  int64 ref_block_num = 3;
  bytes ref_block_hash = 4;
  int64 expiration = 8;
  bytes data = 10;
  repeated Contract contract = 11;
  bytes scripts = 12;
  int64 timestamp = 14;
  int64 fee_limit = 18;
}
message Transaction { TransactionRaw raw_data = 1; repeated bytes signature = 2; }
`;

const root = protobuf.parse(SCHEMA, { keepCase: true }).root;
export const TransferContractType = root.lookupType('protocol.TransferContract');
export const TriggerSmartContractType = root.lookupType('protocol.TriggerSmartContract');
export const TransactionRawType = root.lookupType('protocol.TransactionRaw');
export const TransactionType = root.lookupType('protocol.Transaction');

/** `Transaction.Contract.ContractType` values. */
export const CONTRACT_TYPE = { TransferContract: 1, TriggerSmartContract: 31 } as const;

/** int64 for protobufjs without long.js: {low, high} two's-complement halves. */
export function int64(value: bigint): { low: number; high: number; unsigned: boolean } {
  const v = BigInt.asUintN(64, value);
  return { low: Number(v & 0xffff_ffffn) | 0, high: Number(v >> 32n) | 0, unsigned: false };
}
