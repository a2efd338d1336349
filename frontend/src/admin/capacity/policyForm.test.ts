import { describe, expect, it } from 'vitest';
import { policyRequest, validatePolicy } from './policyForm';
import { draftOf, type PolicyDraft } from './policyKeys';

const errors = (draft: PolicyDraft) => validatePolicy({ ...draftOf({}), ...draft });

describe('the policy schema', () => {
  it('takes the keys set here, within their bounds, and sends only those', () => {
    const draft = { max_gpu_sessions: 3, allowed_tiers: [], queueing_allowed: false, queue_weight: '0.5' };
    expect(errors(draft)).toEqual({});
    expect(errors({ memory_mib_total: 2 ** 50, cpu_cores_total: 1_000_000, idle_timeout_minutes: 527_040 })).toEqual({});
    expect(policyRequest({ ...draftOf({}), ...draft })).toEqual({
      max_gpu_sessions: 3,
      allowed_tiers: [],
      queueing_allowed: false,
      queue_weight: 0.5,
    });
  });

  it('refuses numbers out of range, with the limits and the unit', () => {
    expect(errors({ max_gpu_sessions: 10_001 })).toEqual({ max_gpu_sessions: 'Enter a whole number from 0 to 10,000.' });
    expect(errors({ idle_timeout_minutes: 0 })).toEqual({
      idle_timeout_minutes: 'Enter a whole number from 1 to 527,040 minutes.',
    });
    expect(errors({ queue_weight: 0 })).toEqual({ queue_weight: 'Enter a number from 0.001 to 1,000.' });
    expect(errors({ memory_mib_total: 2 ** 50 + 1024 }).memory_mib_total).toMatch(/to 1,125,899,906,842,624 MiB/);
    expect(errors({ storage_gb: -1 })).toEqual({ storage_gb: 'Enter a whole number from 0 to 1,000,000 GB.' });
  });

  it('refuses a decimal where a whole number is wanted, an empty field and text that only looks like a number', () => {
    expect(errors({ max_gpu_sessions: 2.5 })).toEqual({ max_gpu_sessions: 'Enter a whole number from 0 to 10,000.' });
    expect(Object.keys(errors({ idle_timeout_minutes: '' }))).toEqual(['idle_timeout_minutes']);
    for (const text of ['1e3', '0x10', 'Infinity', '-']) {
      expect(Object.keys(errors({ cpu_cores_per_session: text }))).toEqual(['cpu_cores_per_session']);
    }
    expect(errors({ cpu_cores_per_session: 1.5 })).toEqual({});
  });

  it('refuses names the server would not store, said once for the list', () => {
    expect(errors({ allowed_models: ['A100-80GB', ' '] })).toEqual({ allowed_models: 'Remove the empty name.' });
    expect(errors({ allowed_models: ['x'.repeat(121)] })).toEqual({
      allowed_models: 'Use at most 120 characters in a name.',
    });
    expect(errors({ allowed_tiers: ['1/4\u0000'] })).toEqual({
      allowed_tiers: 'Use no control or invisible characters in a name.',
    });
    expect(errors({ allowed_tiers: Array.from({ length: 201 }, (_, i) => `t${i}`) })).toEqual({
      allowed_tiers: 'Name at most 200; these are 201.',
    });
    expect(policyRequest({ ...draftOf({}), allowed_models: [' A100 ', 'A100'] })).toEqual({ allowed_models: ['A100'] });
  });

  it('takes a priority only as one of its choices, sent as text', () => {
    for (const priority of ['low', 'normal', 'high']) expect(errors({ priority })).toEqual({});
    for (const priority of ['urgent', 'High', ' high', 'high\u0000', '']) {
      expect(errors({ priority })).toEqual({ priority: 'Choose one of low, normal, high.' });
    }
    expect(errors({ priority: 2 })).toEqual({ priority: 'Choose one of low, normal, high.' });
    expect(draftOf({ priority: 'high' }).priority).toBe('high');
    expect(policyRequest({ ...draftOf({}), priority: 'high' })).toEqual({ priority: 'high' });
  });

  it('takes the preemption terms within their bounds', () => {
    const draft = {
      priority: 'low',
      preemptible: false,
      min_runtime_minutes: 0,
      max_wait_minutes: '30',
      preemption_notice_minutes: 10_080,
    };
    expect(errors(draft)).toEqual({});
    expect(policyRequest({ ...draftOf({}), ...draft })).toEqual({
      priority: 'low',
      preemptible: false,
      min_runtime_minutes: 0,
      max_wait_minutes: 30,
      preemption_notice_minutes: 10_080,
    });
    expect(errors({ min_runtime_minutes: -1, max_wait_minutes: 0, preemption_notice_minutes: 10_081 })).toEqual({
      min_runtime_minutes: 'Enter a whole number from 0 to 527,040 minutes.',
      max_wait_minutes: 'Enter a whole number from 1 to 527,040 minutes.',
      preemption_notice_minutes: 'Enter a whole number from 0 to 10,080 minutes.',
    });
    expect(errors({ max_wait_minutes: 527_041 })).toEqual({
      max_wait_minutes: 'Enter a whole number from 1 to 527,040 minutes.',
    });
  });

  it('sets nothing when no key is set here', () => {
    expect(errors({})).toEqual({});
    expect(policyRequest(draftOf({}))).toEqual({});
  });
});
