import { describe, expect, it } from 'vitest';
import { clusterRequest, NEW_CLUSTER, validateCluster, type ClusterValues } from './registerClusterForm';

const good: ClusterValues = { ...NEW_CLUSTER, name: 'lab-east', kubeconfig: 'apiVersion: v1\nkind: Config\n' };
const errors = (change: Partial<ClusterValues>) => validateCluster({ ...good, ...change });

describe('the register-cluster schema', () => {
  it('takes a cluster within every bound', () => {
    expect(errors({})).toEqual({});
    expect(errors({ name: 'a'.repeat(63), domain: 'Sessions.Example.org:8443' })).toEqual({});
  });

  it('names each missing field', () => {
    expect(errors({ name: ' ', domain: ' ', kubeconfig: '\n ' })).toEqual({
      name: 'Enter a name.',
      domain: 'Enter the domain session pages are served under.',
      kubeconfig: 'Paste a kubeconfig or choose its file.',
    });
  });

  it('refuses a name the server would refuse', () => {
    expect(errors({ name: 'a'.repeat(64) })).toEqual({ name: 'Use at most 63 characters.' });
    for (const name of ['Lab', '-lab', 'lab-', 'lab_east', 'lab east', 'lab\u0000']) {
      expect(errors({ name })).toEqual({
        name: 'Use lowercase letters, digits and dashes, starting and ending with a letter or digit.',
      });
    }
  });

  it('refuses a domain the server would refuse', () => {
    expect(errors({ domain: 'localhost' })).toEqual({ domain: 'Enter a domain name such as sessions.example.org.' });
    expect(errors({ domain: 'sessions.example.org:0' })).toEqual({ domain: 'The port must be between 1 and 65535.' });
    expect(errors({ domain: 'sessions.example.org:99999' })).toEqual({ domain: 'The port must be between 1 and 65535.' });
    expect(errors({ domain: `${'a.'.repeat(100)}org` })).toEqual({ domain: 'Use at most 200 characters.' });
  });

  it('refuses an oversized kubeconfig or one with NUL', () => {
    expect(errors({ kubeconfig: 'k'.repeat(262_145) })).toEqual({ kubeconfig: 'This kubeconfig is too large (256 KiB at most).' });
    expect(errors({ kubeconfig: 'apiVersion: v1\u0000' })).toEqual({ kubeconfig: 'Remove the NUL character; a kubeconfig is text.' });
  });

  it('sends the name trimmed and the domain lowercased, the kubeconfig as given', () => {
    expect(clusterRequest({ name: ' lab-east ', domain: ' Sessions.Example.org ', kubeconfig: ' k ' })).toEqual({
      name: 'lab-east',
      sessions_domain: 'sessions.example.org',
      kubeconfig: ' k ',
    });
  });
});
