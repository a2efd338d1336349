/** What removing a cluster does, said the same way on the list and the detail page. */
export function removeClusterMessage(name: string): string {
  return `Remove “${name}”? GShare stops tracking its cards and deletes its kubeconfig within minutes. Stop every session running on this cluster first: it cannot be removed while any remain.`;
}
