// PLACEHOLDER: replaced by the screen's implementation.
export function AuditPage() {
  return <p>AuditPage</p>;
}
