// PLACEHOLDER: replaced by the screen's implementation.
export function TransferDetailPage() {
  return <p>TransferDetailPage</p>;
}
