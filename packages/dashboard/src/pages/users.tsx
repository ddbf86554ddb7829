// PLACEHOLDER: replaced by the screen's implementation.
export function UsersPage() {
  return <p>UsersPage</p>;
}
