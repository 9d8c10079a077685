"""A pilot's provisioned time partitioned into the OSG report's categories
(jobmon.report.pilot): the report's remainder example, slices with overlapping payloads of
different sizes worked out by hand, payloads past the pilot's end, GPUs, windows; and,
over random pilots and payloads, that the partition is exhaustive and does not overlap."""
import signal

import pytest
from hypothesis import given, settings, strategies as st

from jobmon.report import canonical as c
from jobmon.report import pilot as p
from jobmon.report.canonical import GIB, Resources, RunEnd
from jobmon.report.pilot import Payload, Pilot

H = 3600.0
COMPLETED = c.classify(RunEnd(exit_code=0))
USER_FAILED = c.classify(RunEnd(exit_code=1))
SITE_FAILED = c.classify(RunEnd(state="held", hold_code=45))     # container test failed
EVICTED = c.classify(RunEnd(state="evicted", vacate_code=1013))  # startd shut down
KILLED = c.classify(RunEnd(signal=signal.SIGTERM))               # from outside, cause unknown
NO_STATUS = c.classify(RunEnd())


def hours(acct):
    """{category: (core-hours, GPU-hours)}, rounded, without the empty ones."""
    return {k: (round(v.core_hours, 9), round(v.gpu_hours, 9))
            for k, v in acct.categories.items() if v.core_hours or v.gpu_hours}


def res(cores, gib=None, gpus=0):
    return Resources(cores, None if gib is None else int(gib * GIB), gpus)


# --- the report's worked examples --------------------------------------------------------

def test_report_remainder_example_one_core_hour_to_each_running_job():
    """3 idle cores + 3 GB: 1 core-hour of overhead (memory-limited); the remaining 2 go
    1 each to the two jobs running in that hour, one completed, one stopped by the pilot's
    end (the report: "1 CPU core hour to each of Pilot goodput and Pilot preemption")."""
    pilot = Pilot(0, H, res(5, 7), validated_at=0)
    done = Payload(0, H, res(1, 2), COMPLETED, "done")
    cut = Payload(0, None, res(1, 2), NO_STATUS, "cut off")
    acct = p.account(pilot, [done, cut])
    assert hours(acct) == {"goodput": (2.0, 0), "preemption": (2.0, 0), "overhead": (1.0, 0)}
    own = 1.0   # each job's own core for the hour; the rest is its share of the remainder
    assert [round(x.core_hours - own, 9) for x in acct.payloads] == [1.0, 1.0]
    assert acct.payload_categories == ["goodput", "preemption"]
    assert acct.balanced()


@pytest.mark.parametrize("idle_cores, idle_gib, overhead", [(3, 3, 1), (3, 1, 0), (2, 6, 2)])
def test_report_idle_examples_inside_a_pilot(idle_cores, idle_gib, overhead):
    """The report's three examples as the idle part of a pilot running one 1-core, 2 GiB
    job for an hour: overhead is the whole units, the job gets the rest."""
    pilot = Pilot(0, H, res(1 + idle_cores, 2 + idle_gib), validated_at=0)
    acct = p.account(pilot, [Payload(0, H, res(1, 2), COMPLETED)])
    assert acct.categories["overhead"].core_hours == overhead
    assert acct.categories["goodput"].core_hours == 1 + idle_cores - overhead


def test_time_with_no_job_running_is_all_overhead_even_below_a_whole_unit():
    # 3 cores + 1 GiB make no whole unit, yet with no job running they are all overhead
    pilot = Pilot(0, 3 * H, res(3, 1), validated_at=0)
    acct = p.account(pilot, [Payload(H, 2 * H, res(3, 1), COMPLETED)])
    assert hours(acct) == {"goodput": (3.0, 0), "overhead": (6.0, 0)}


# --- pilots that never ran a payload -----------------------------------------------------

def test_pilot_with_no_payload_is_validation_then_decision_problem():
    pilot = Pilot(0, 10 * H, res(4, 8, gpus=1), validated_at=0.5 * H)
    acct = p.account(pilot, [])
    assert hours(acct) == {"validation": (2.0, 0.5), "decision_problem": (38.0, 9.5)}
    assert acct.validated_at == 0.5 * H and acct.balanced()


def test_pilot_that_never_validated_is_all_validation():
    acct = p.account(Pilot(0, 2 * H, res(8, 3), validated_at=None))
    assert hours(acct) == {"validation": (16.0, 0)}   # all of it, never rounded
    assert acct.validated_at is None


# --- slices: overlapping payloads of different sizes -------------------------------------

def test_overlapping_payloads_of_different_sizes_sliced_by_hand():
    """8 cores + 12 GiB for 4 h. A: 4 cores 8 GiB, 0-3 h, completed. B: 2 cores 2 GiB,
    1 h to the pilot's end, cut off. C: 2 cores 8 GiB, 2-2.5 h, site failure.
      0-1    A       idle 4c 4G: 2 units overhead, 2 left -> A         A 6
      1-2    A B     idle 2c 2G: 1 unit, 1 left -> A 2/3, B 1/3        A 4 2/3, B 2 1/3
      2-2.5  A B C   memory over-allocated (18 G): 0 idle cores        A 2, B 1, C 1
      2.5-3  A B     as 1-2, half an hour                              A 2 1/3, B 1 1/6
      3-4    B       idle 6c 10G: 5 units (memory-limited), 1 left     B 3
    """
    pilot = Pilot(0, 4 * H, res(8, 12), validated_at=0)
    a = Payload(0, 3 * H, res(4, 8), COMPLETED, "A")
    b = Payload(H, None, res(2, 2), KILLED, "B")
    cc = Payload(2 * H, 2.5 * H, res(2, 8), SITE_FAILED, "C")
    acct = p.account(pilot, [a, b, cc])
    assert [round(x.core_hours, 9) for x in acct.payloads] == [15.0, 7.5, 1.0]
    assert hours(acct) == {"goodput": (15.0, 0), "preemption": (7.5, 0),
                           "misconfiguration": (1.0, 0), "overhead": (8.5, 0)}
    assert acct.provisioned.core_hours == 32.0 and acct.balanced()


def test_memory_limited_remainder_is_shared_by_cores():
    # 8 cores + 6 GiB; jobs of 1 and 3 cores with 1 GiB each: 4 idle cores, 4 GiB -> 2
    # whole units; the other 2 cores go 1:3 to the jobs
    pilot = Pilot(0, H, res(8, 6), validated_at=0)
    small = Payload(0, H, res(1, 1), COMPLETED)
    big = Payload(0, H, res(3, 1), USER_FAILED)
    acct = p.account(pilot, [small, big])
    assert [x.core_hours for x in acct.payloads] == [1.5, 4.5]
    assert acct.categories["overhead"].core_hours == 2.0
    # a user's failure is the pilot's goodput, and shown as user badput within it
    assert acct.categories["goodput"].core_hours == 6.0
    assert acct.user_badput.core_hours == 4.5


def test_core_limited_idle_time_leaves_no_remainder():
    pilot = Pilot(0, H, res(8, 32), validated_at=0)
    acct = p.account(pilot, [Payload(0, H, res(3, 2), COMPLETED),
                             Payload(0, H, res(1, 2), SITE_FAILED)])
    assert hours(acct) == {"goodput": (3.0, 0), "misconfiguration": (1.0, 0),
                           "overhead": (4.0, 0)}


def test_fractional_idle_cores_leave_their_fraction_to_the_jobs():
    pilot = Pilot(0, H, res(4, 64), validated_at=0)
    acct = p.account(pilot, [Payload(0, H, res(1.5, 2), COMPLETED)])
    assert hours(acct) == {"goodput": (2.0, 0), "overhead": (2.0, 0)}


def test_cores_over_allocated_are_scaled_to_what_the_pilot_had():
    pilot = Pilot(0, H, res(4, 8), validated_at=0)
    acct = p.account(pilot, [Payload(0, H, res(4, 4), COMPLETED),
                             Payload(0, H, res(2, 4), SITE_FAILED)])
    assert [round(x.core_hours, 9) for x in acct.payloads] == [round(8 / 3, 9), round(4 / 3, 9)]
    assert acct.categories["overhead"].core_hours == 0 and acct.balanced()


# --- payloads and the pilot's end --------------------------------------------------------

def test_payload_running_past_the_pilots_end_is_clipped_to_it_and_preemption():
    pilot = Pilot(0, 2 * H, res(2, 4), validated_at=0)
    late = Payload(H, 5 * H, res(2, 4), KILLED, "recorded end after the pilot's")
    acct = p.account(pilot, [late])
    assert hours(acct) == {"preemption": (2.0, 0), "overhead": (2.0, 0)}


def test_a_run_killed_from_outside_is_preemption_only_at_the_pilots_end():
    pilot = Pilot(0, 10 * H, res(3, 6), validated_at=0)
    near_end = Payload(0, 10 * H - 60, res(1, 2), KILLED, "stopped with the pilot")
    midway = Payload(0, 5 * H, res(1, 2), KILLED, "killed mid-life")
    no_end = Payload(0, None, res(1, 2), NO_STATUS, "no record of its end")
    acct = p.account(pilot, [near_end, midway, no_end])
    assert acct.payload_categories == ["preemption", "goodput", "preemption"]
    assert acct.user_badput.core_hours == acct.categories["goodput"].core_hours == 5.0
    evicted_midway = p.account(pilot, [Payload(0, 5 * H, res(1, 2), EVICTED)])
    assert evicted_midway.payload_categories == ["preemption"]


def test_payloads_outside_the_pilots_life_are_ignored():
    pilot = Pilot(10 * H, 11 * H, res(1, 2), validated_at=10 * H)
    before = Payload(0, H, res(1, 2), COMPLETED)
    after = Payload(12 * H, 13 * H, res(1, 2), COMPLETED)
    acct = p.account(pilot, [before, after])
    assert acct.payload_categories == [None, None]
    assert hours(acct) == {"decision_problem": (1.0, 0)}


def test_validation_cannot_end_after_the_first_payload_started():
    pilot = Pilot(0, 3 * H, res(1, 2), validated_at=2 * H)
    acct = p.account(pilot, [Payload(H, 3 * H, res(1, 2), COMPLETED)])
    assert acct.validated_at == H
    assert hours(acct) == {"validation": (1.0, 0), "goodput": (2.0, 0)}
    unmarked = p.account(Pilot(0, 3 * H, res(1, 2), validated_at=None),
                         [Payload(H, 3 * H, res(1, 2), COMPLETED)])
    assert unmarked.validated_at == H and hours(unmarked) == hours(acct)


# --- GPUs -----------------------------------------------------------------------------------

def test_gpu_time_is_canonical_as_it_is_and_idle_gpus_are_overhead():
    pilot = Pilot(0, 2 * H, res(4, 8, gpus=2), validated_at=0)
    trains = Payload(0, 2 * H, res(1, 2, gpus=1), COMPLETED)
    breaks = Payload(0, H, res(1, 2, gpus=1), SITE_FAILED)
    acct = p.account(pilot, [trains, breaks])
    gpu = {k: v.gpu_hours for k, v in acct.categories.items() if v.gpu_hours}
    assert gpu == {"goodput": 2.0, "misconfiguration": 1.0, "overhead": 1.0}
    assert acct.provisioned.gpu_hours == 4.0 and acct.balanced()


def test_gpu_only_payload_takes_the_core_remainder_and_over_allocated_gpus_are_scaled():
    pilot = Pilot(0, H, res(1, 1, gpus=1), validated_at=0)
    acct = p.account(pilot, [Payload(0, H, res(0, 0, gpus=1), COMPLETED),
                             Payload(0, H, res(0, 0, gpus=1), SITE_FAILED)])
    # 1 idle core with 1 GiB is no whole unit: shared evenly by the two jobs with no cores
    assert [(x.core_hours, x.gpu_hours) for x in acct.payloads] == [(0.5, 0.5), (0.5, 0.5)]
    assert acct.categories["overhead"].core_hours == 0


# --- windows and sums ------------------------------------------------------------------------

def test_windows_of_a_pilot_add_up_to_its_whole_account():
    pilot = Pilot(0, 4 * H, res(8, 12), validated_at=0.25 * H)
    pays = [Payload(0.5 * H, 3 * H, res(4, 8), COMPLETED),
            Payload(H, None, res(2, 2), KILLED)]
    whole = p.account(pilot, pays)
    parts = [p.account(pilot, pays, since=t, until=t + H) for t in (0, H, 2 * H, 3 * H)]
    summed = p.add_up(parts)
    for name in p.CATEGORIES:
        assert summed[name].core_hours == pytest.approx(whole.categories[name].core_hours)
    assert summed["provisioned"].core_hours == whole.provisioned.core_hours == 32.0
    assert parts[0].categories["validation"].core_hours == 2.0


def test_add_up_sums_pilots():
    a = p.account(Pilot(0, H, res(2, 4), validated_at=0))
    b = p.account(Pilot(0, H, res(1, 2), validated_at=None))
    total = p.add_up([a, b])
    assert (total["decision_problem"].core_hours, total["validation"].core_hours,
            total["provisioned"].core_hours) == (2.0, 1.0, 3.0)


def test_bad_times_are_refused():
    with pytest.raises(ValueError):
        Pilot(10, 5, res(1, 2), validated_at=None)
    with pytest.raises(ValueError):
        Payload(10, 5, res(1, 2), COMPLETED)


# --- properties over random pilots and payloads -----------------------------------------------

ENDS = [COMPLETED, USER_FAILED, SITE_FAILED, EVICTED, KILLED, NO_STATUS]
STEP = 900.0   # quarter hours, so that hand-checkable cuts coincide often
counts = st.one_of(st.integers(0, 16), st.floats(0, 16, allow_nan=False))
memory = st.one_of(st.none(), st.integers(0, 64).map(lambda n: n * GIB // 2),
                   st.floats(0, 64 * GIB, allow_nan=False))


@st.composite
def pilots_and_payloads(draw):
    end = draw(st.integers(0, 48)) * STEP
    validated = draw(st.one_of(st.none(), st.integers(0, 48).map(lambda n: min(n * STEP, end))))
    pilot = Pilot(0.0, end, Resources(draw(counts), draw(memory), draw(counts)), validated)
    payloads = []
    for _ in range(draw(st.integers(0, 8))):
        start = draw(st.integers(-4, 52)) * STEP
        length = draw(st.one_of(st.none(), st.integers(0, 52).map(lambda n: n * STEP)))
        payloads.append(Payload(start, None if length is None else start + length,
                                Resources(draw(counts), draw(memory), draw(counts)),
                                draw(st.sampled_from(ENDS))))
    return pilot, payloads


@settings(max_examples=200, deadline=None)
@given(pilots_and_payloads())
def test_partition_is_exhaustive_and_never_negative(case):
    pilot, payloads = case
    acct = p.account(pilot, payloads)
    assert acct.balanced(), (acct.unaccounted(), acct)
    hours_of = pilot.end - pilot.start
    assert acct.provisioned.core_hours == pytest.approx(pilot.resources.cores * hours_of / H)
    for name, h in acct.categories.items():
        assert h.core_hours >= -1e-9 and h.gpu_hours >= -1e-9, name
    assert 0 <= acct.user_badput.core_hours <= acct.categories["goodput"].core_hours + 1e-9


@settings(max_examples=200, deadline=None)
@given(pilots_and_payloads())
def test_payload_shares_are_exactly_the_job_categories(case):
    """Nothing is counted twice: the payloads' shares add up to goodput, misconfiguration
    and preemption, and validation and decision problem never hold payload time."""
    pilot, payloads = case
    acct = p.account(pilot, payloads)
    jobs = sum(acct.categories[k].core_hours for k in (p.GOODPUT, p.MISCONFIGURATION,
                                                       p.PREEMPTION))
    assert sum(x.core_hours for x in acct.payloads) == pytest.approx(jobs, abs=1e-9)
    ran = any(cat is not None for cat in acct.payload_categories)
    if ran:
        assert acct.categories["decision_problem"].core_hours == 0
    if not ran:
        assert jobs == 0 and acct.categories["overhead"].core_hours == 0


@settings(max_examples=200, deadline=None)
@given(pilots_and_payloads(), st.integers(0, 48))
def test_two_windows_add_up_to_the_whole(case, cut):
    pilot, payloads = case
    t = cut * STEP
    whole = p.account(pilot, payloads)
    left = p.account(pilot, payloads, until=t)
    right = p.account(pilot, payloads, since=t)
    for name in p.CATEGORIES:
        assert left.categories[name].core_hours + right.categories[name].core_hours == \
            pytest.approx(whole.categories[name].core_hours, abs=1e-9)
        assert left.categories[name].gpu_hours + right.categories[name].gpu_hours == \
            pytest.approx(whole.categories[name].gpu_hours, abs=1e-9)


@settings(max_examples=200, deadline=None)
@given(pilots_and_payloads())
def test_without_a_memory_limit_whole_cores_leave_no_remainder(case):
    """Integer cores, memory not limiting, nothing over-allocated: every payload gets
    exactly its own cores and GPUs for its time in the pilot, no more."""
    pilot, payloads = case
    pilot = Pilot(pilot.start, pilot.end, Resources(64, None, 64), pilot.validated_at)
    payloads = [Payload(x.start, x.end, Resources(round(x.resources.cores) % 8, None,
                                                  round(x.resources.gpus or 0) % 8), x.ended)
                for x in payloads]
    acct = p.account(pilot, payloads)
    for x, share, cat in zip(payloads, acct.payloads, acct.payload_categories):
        if cat is None:
            continue
        end = pilot.end if x.end is None else min(x.end, pilot.end)
        span = (end - max(x.start, pilot.start)) / H
        assert share.core_hours == pytest.approx(x.resources.cores * span, abs=1e-9)
        assert share.gpu_hours == pytest.approx(x.resources.gpus * span, abs=1e-9)
