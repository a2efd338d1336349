import { describe, expect, it } from 'vitest';
import {
  clusterIsolationRequest,
  clusterIsolationSchema,
  dedicateSchema,
  dedicationRequest,
  readiness,
} from './isolationForms';

describe('the dedication form', () => {
  it('needs an organization, and sends a group when one is chosen', () => {
    expect(dedicateSchema.safeParse({ orgId: null, groupId: null }).success).toBe(false);
    expect(dedicationRequest({ orgId: 'o', groupId: null }, 'c', 'n')).toEqual({
      cluster_id: 'c',
      node: 'n',
      organization_id: 'o',
    });
    expect(dedicationRequest({ orgId: 'o', groupId: 'g' }, 'c', 'n')).toEqual({ cluster_id: 'c', node: 'n', group_id: 'g' });
  });
});

describe("the cluster's isolation form", () => {
  it('takes a RuntimeClass name or none, and refuses anything else', () => {
    for (const good of ['', 'gvisor', 'kata-qemu', 'runsc.gpu']) {
      expect(clusterIsolationSchema.safeParse({ sandboxClass: good, userNamespaces: false }).success).toBe(true);
    }
    for (const bad of ['GVisor', '-x', 'a'.repeat(254), 'gvisor\u0000', 'run sc']) {
      expect(clusterIsolationSchema.safeParse({ sandboxClass: bad, userNamespaces: false }).success).toBe(false);
    }
    expect(clusterIsolationRequest({ sandboxClass: '  ', userNamespaces: true })).toEqual({
      sandbox_runtime_class: null,
      user_namespaces: true,
    });
  });
});

describe("a node's readiness", () => {
  it('names the label and taint a dedicated node still needs', () => {
    const dedication = { label: 't1' };
    expect(readiness({ dedication, dedicated_label: null, dedicated_tainted: false })).toBe(
      'Needs the label gshare.io/dedicated=t1 and the taint gshare.io/dedicated=t1:NoSchedule.',
    );
    expect(readiness({ dedication, dedicated_label: 't1', dedicated_tainted: true })).toBe('Labelled and tainted.');
    expect(readiness({ dedication: null, dedicated_label: null, dedicated_tainted: false })).toBe('Shared.');
    expect(readiness({ dedication: null, dedicated_label: 't1', dedicated_tainted: false })).toMatch(/no dedication/);
  });
});
