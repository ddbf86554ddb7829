// PLACEHOLDER: replaced by the screen's implementation.
export function MasterKeysPage() {
  return <p>MasterKeysPage</p>;
}
