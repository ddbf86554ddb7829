// PLACEHOLDER: replaced by the screen's implementation.
export function PoliciesPage() {
  return <p>PoliciesPage</p>;
}
