// PLACEHOLDER: replaced by the screen's implementation.
export function TransfersPage() {
  return <p>TransfersPage</p>;
}
