//! The concurrency of one priority level: how many seats it has ([`nominal_limits`]) and who gets
//! the next free one ([`QueueSet`]), as upstream's `queueset`.
//!
//! A Limited level with `limitResponse: Queue` has `queues` FIFO queues. A flow (a FlowSchema
//! and its distinguisher) is dealt a hand of `handSize` queues by shuffle sharding on the flow's
//! hash ([`deal`]); its request joins the shortest of them (waiting plus executing), or is
//! rejected when that queue already holds `queueLengthLimit` requests. A freed seat goes to the
//! head of the next non-empty queue in round-robin order, so each active flow gets its turn
//! however many requests another flow has queued. (Upstream orders queues by virtual finish
//! time, which also weighs how long each request held its seat; berth counts each request as
//! one seat of equal cost, where round robin gives the same shares.)
//!
//! The queue set is data: it neither reads a clock nor wakes anyone. It hands back the waiters
//! to start, and the driver ([`super::FlowControl`]) tells them and times them out.

use std::collections::{BTreeMap, VecDeque};

/// Upstream's default `--max-requests-inflight`: the read-only half of the server's
/// concurrency limit.
pub const DEFAULT_MAX_REQUESTS_INFLIGHT: u32 = 400;

/// Upstream's default `--max-mutating-requests-inflight`: the mutating half of the server's
/// concurrency limit. With APF the two are added into one limit shared by all Limited levels.
pub const DEFAULT_MAX_MUTATING_REQUESTS_INFLIGHT: u32 = 200;

/// The fewest seats a Limited level gets, so that a level with tiny (or zero) shares still
/// serves its requests one at a time instead of timing every one out (upstream lets such a level
/// borrow seats from others; berth does not lend, see [`nominal_limits`]).
pub const MIN_SEATS: u32 = 1;

/// How a level answers when its seats are taken, from its PriorityLevelConfiguration.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Response {
    /// `type: Exempt`: never waits and is not counted against the server's limit.
    Exempt,
    /// `limitResponse.type: Reject`: refused at once when no seat is free.
    Reject,
    /// `limitResponse.type: Queue`.
    Queue {
        /// `queues`: how many queues the level has.
        queues: u32,
        /// `handSize`: how many queues a flow may use.
        hand_size: u32,
        /// `queueLengthLimit`: how many requests may wait in one queue.
        queue_length_limit: u32,
    },
}

/// Why a request was not served, with upstream's `reason` label of
/// `apiserver_flowcontrol_rejected_requests_total`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Reason {
    /// The queue the flow was dealt was full.
    QueueFull,
    /// A Reject level had no free seat.
    ConcurrencyLimit,
    /// The request waited in its queue longer than the wait limit.
    TimeOut,
    /// The request's level was removed while it waited and no other could take it.
    Cancelled,
}

impl Reason {
    /// Upstream's label value.
    pub fn label(self) -> &'static str {
        match self {
            Reason::QueueFull => "queue-full",
            Reason::ConcurrencyLimit => "concurrency-limit",
            Reason::TimeOut => "time-out",
            Reason::Cancelled => "cancelled",
        }
    }
}

/// Upstream's split of the server's concurrency limit among priority levels: each level gets
/// `ceil(server_limit * shares / sum of all shares)` seats, where `shares` is its
/// `nominalConcurrencyShares` (an Exempt level's shares count in the sum but its seats are not
/// enforced). Limited levels get at least [`MIN_SEATS`]. Upstream then lends and borrows seats
/// between levels by `lendablePercent`/`borrowingLimitPercent`; berth does not, so each level's
/// limit is its nominal one.
pub fn nominal_limits(server_limit: u32, shares: &[u32]) -> Vec<u32> {
    let sum: u64 = shares.iter().map(|&s| u64::from(s)).sum();
    shares
        .iter()
        .map(|&s| {
            if sum == 0 {
                return MIN_SEATS;
            }
            let seats = (u64::from(server_limit) * u64::from(s)).div_ceil(sum);
            u32::try_from(seats).unwrap_or(u32::MAX).max(MIN_SEATS)
        })
        .collect()
}

/// FNV-1a of the flow's identity: the FlowSchema's name and the flow distinguisher. Stable, so a
/// flow keeps its hand of queues across restarts and reconfigurations.
pub fn flow_hash(flow_schema: &str, distinguisher: &str) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in flow_schema
        .bytes()
        .chain(std::iter::once(0))
        .chain(distinguisher.bytes())
    {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

/// Shuffle sharding: deals `hand` distinct queues out of `deck` from `hash`, reading the hash as
/// a mixed-radix number (the first card is `hash % deck`, the next `(hash / deck) % (deck - 1)`
/// among the cards left, ...), as upstream's `shufflesharding.Dealer`.
/// At most [`MAX_HAND_SIZE`] cards are dealt.
pub fn deal(mut hash: u64, deck: u32, hand: u32) -> Vec<u32> {
    let hand = hand.min(deck).min(MAX_HAND_SIZE);
    let mut cards: Vec<u32> = Vec::with_capacity(hand as usize);
    for i in 0..hand {
        let left = u64::from(deck - i);
        let mut pick = (hash % left) as u32;
        hash /= left;
        // The pick-th card not dealt yet: step over the dealt ones, in increasing order.
        let mut dealt = cards.clone();
        dealt.sort_unstable();
        for c in dealt {
            if c <= pick {
                pick += 1;
            }
        }
        cards.push(pick);
    }
    cards
}

/// Upstream's validation ceiling of `queues`. Queues are kept only while they hold or run
/// requests, so a level's memory follows its traffic, not this number.
pub const MAX_QUEUES: u32 = 10_000_000;

/// The largest `handSize` used: upstream's validation bounds a hand's entropy to 60 bits
/// (`handSize * log2(queues) <= 60`), so no valid hand of two or more queues exceeds 60 cards.
pub const MAX_HAND_SIZE: u32 = 60;

/// How many queues a level answering as `response` has.
fn queue_count(response: Response) -> u32 {
    match response {
        Response::Queue { queues, .. } => queues.clamp(1, MAX_QUEUES),
        Response::Exempt | Response::Reject => 0,
    }
}

fn hand_size(response: Response) -> u32 {
    match response {
        Response::Queue { hand_size, .. } => hand_size.clamp(1, MAX_HAND_SIZE),
        Response::Exempt | Response::Reject => 0,
    }
}

/// A seat a request holds while it executes; give it back with [`QueueSet::release`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Seat {
    /// The queue it came through (`None`: the level does not queue).
    queue: Option<u32>,
    /// The queue layout it was taken under: a seat of an older layout frees no queue's count.
    layout: u64,
}

/// What [`QueueSet::offer`] decided.
#[derive(Debug)]
pub enum Offer<T> {
    /// A seat was free: execute now.
    Execute(Seat),
    /// The request waits in queue `queue` until [`QueueSet::release`] (or
    /// [`QueueSet::reconfigure`]) hands it a seat, or [`QueueSet::cancel`] takes it out.
    Queued { queue: u32 },
    /// Refused: the waiter is handed back.
    Rejected(Reason, T),
}

struct Waiter<T> {
    ticket: u64,
    flow: u64,
    item: T,
}

struct Queue<T> {
    waiting: VecDeque<Waiter<T>>,
    /// Requests that came through this queue and still execute.
    executing: u32,
}

impl<T> Default for Queue<T> {
    fn default() -> Self {
        Queue {
            waiting: VecDeque::new(),
            executing: 0,
        }
    }
}

impl<T> Queue<T> {
    fn len(&self) -> usize {
        self.waiting.len() + self.executing as usize
    }
}

/// The seats and queues of one priority level. `T` is what a waiter is woken with (the driver's
/// channel).
pub struct QueueSet<T> {
    limit: u32,
    response: Response,
    executing: u32,
    /// The queues in use (waiting or executing requests), by number `0..queue_count`.
    queues: BTreeMap<u32, Queue<T>>,
    /// The next queue round robin looks at.
    next: u32,
    /// Bumped when the queues are rebuilt.
    layout: u64,
}

impl<T> QueueSet<T> {
    /// A level with `limit` seats answering as `response`.
    pub fn new(limit: u32, response: Response) -> Self {
        QueueSet {
            limit,
            response,
            executing: 0,
            queues: BTreeMap::new(),
            next: 0,
            layout: 0,
        }
    }

    /// The level's seats.
    pub fn limit(&self) -> u32 {
        self.limit
    }

    /// Requests holding a seat.
    pub fn executing(&self) -> u32 {
        self.executing
    }

    /// Requests waiting in the queues.
    pub fn waiting(&self) -> usize {
        self.queues.values().map(|q| q.waiting.len()).sum()
    }

    /// The queue of `flow`'s hand with the fewest requests (waiting and executing).
    fn shortest_of_hand(&self, flow: u64) -> u32 {
        deal(flow, queue_count(self.response), hand_size(self.response))
            .into_iter()
            .min_by_key(|q| self.queues.get(q).map_or(0, Queue::len))
            .unwrap_or(0)
    }

    /// A request of flow `flow` asks for a seat; `item` is kept if it has to wait.
    pub fn offer(&mut self, flow: u64, ticket: u64, item: T) -> Offer<T> {
        let free = self.executing < self.limit;
        match self.response {
            Response::Exempt => {
                self.executing += 1;
                Offer::Execute(self.seat(None))
            }
            Response::Reject if free => {
                self.executing += 1;
                Offer::Execute(self.seat(None))
            }
            Response::Reject => Offer::Rejected(Reason::ConcurrencyLimit, item),
            Response::Queue {
                queue_length_limit, ..
            } => {
                let queue = self.shortest_of_hand(flow);
                // Nobody waits when a seat is free (every release dispatches), so a free seat
                // is this request's.
                if free {
                    self.executing += 1;
                    self.queues.entry(queue).or_default().executing += 1;
                    return Offer::Execute(self.seat(Some(queue)));
                }
                let waiting = self.queues.get(&queue).map_or(0, |q| q.waiting.len());
                if waiting >= queue_length_limit as usize {
                    return Offer::Rejected(Reason::QueueFull, item);
                }
                self.queues
                    .entry(queue)
                    .or_default()
                    .waiting
                    .push_back(Waiter { ticket, flow, item });
                Offer::Queued { queue }
            }
        }
    }

    fn seat(&self, queue: Option<u32>) -> Seat {
        Seat {
            queue,
            layout: self.layout,
        }
    }

    /// Drops queue `queue` if it is no longer in use.
    fn tidy(&mut self, queue: u32) {
        if self.queues.get(&queue).is_some_and(|q| q.len() == 0) {
            self.queues.remove(&queue);
        }
    }

    /// Takes waiter `ticket` out of queue `queue` (it gave up or timed out); `None` if it is no
    /// longer waiting there (it was started, or the queues were rebuilt: see
    /// [`QueueSet::cancel_anywhere`]).
    pub fn cancel(&mut self, queue: u32, ticket: u64) -> Option<T> {
        let q = self.queues.get_mut(&queue)?;
        let at = q.waiting.iter().position(|w| w.ticket == ticket)?;
        let item = q.waiting.remove(at).map(|w| w.item);
        self.tidy(queue);
        item
    }

    /// Takes waiter `ticket` out of whichever queue holds it.
    pub fn cancel_anywhere(&mut self, ticket: u64) -> Option<T> {
        let queue = *self
            .queues
            .iter()
            .find(|(_, q)| q.waiting.iter().any(|w| w.ticket == ticket))?
            .0;
        self.cancel(queue, ticket)
    }

    /// Gives `seat` back and starts as many waiters as there are free seats, round robin over
    /// the queues: each returned waiter now holds the returned seat.
    pub fn release(&mut self, seat: Seat) -> Vec<(Seat, T)> {
        self.executing = self.executing.saturating_sub(1);
        if let (Some(queue), true) = (seat.queue, seat.layout == self.layout) {
            if let Some(q) = self.queues.get_mut(&queue) {
                q.executing = q.executing.saturating_sub(1);
            }
            self.tidy(queue);
        }
        self.dispatch()
    }

    /// The first queue with waiters at or after the round-robin cursor, wrapping around.
    fn next_waiting(&self) -> Option<u32> {
        let waits = |(&n, q): (&u32, &Queue<T>)| (!q.waiting.is_empty()).then_some(n);
        self.queues
            .range(self.next..)
            .find_map(waits)
            .or_else(|| self.queues.range(..self.next).find_map(waits))
    }

    fn dispatch(&mut self) -> Vec<(Seat, T)> {
        let mut started = Vec::new();
        while self.executing < self.limit {
            let Some(queue) = self.next_waiting() else {
                break;
            };
            let Some(q) = self.queues.get_mut(&queue) else {
                break;
            };
            let Some(w) = q.waiting.pop_front() else {
                break;
            };
            q.executing += 1;
            self.executing += 1;
            self.next = queue.saturating_add(1);
            started.push((self.seat(Some(queue)), w.item));
        }
        started
    }

    /// Applies a changed configuration. Waiters stay admitted: with another number of queues
    /// or hand size they are dealt again (in their order, beyond the length limit if need be);
    /// a level that no longer queues starts them all. Returns the waiters the new limit lets
    /// start.
    pub fn reconfigure(&mut self, limit: u32, response: Response) -> Vec<(Seat, T)> {
        let same_layout = queue_count(self.response) == queue_count(response)
            && hand_size(self.response) == hand_size(response);
        self.limit = limit;
        self.response = response;
        if same_layout {
            return self.dispatch();
        }
        let waiters: Vec<Waiter<T>> = std::mem::take(&mut self.queues)
            .into_values()
            .flat_map(|q| q.waiting)
            .collect();
        self.layout += 1;
        self.next = 0;
        let mut started = Vec::new();
        for w in waiters {
            match self.response {
                Response::Queue { .. } => {
                    let queue = self.shortest_of_hand(w.flow);
                    self.queues.entry(queue).or_default().waiting.push_back(w);
                }
                Response::Exempt | Response::Reject => {
                    self.executing += 1;
                    started.push((self.seat(None), w.item));
                }
            }
        }
        started.extend(self.dispatch());
        started
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn queued(queues: u32, hand_size: u32, queue_length_limit: u32) -> Response {
        Response::Queue {
            queues,
            hand_size,
            queue_length_limit,
        }
    }

    #[test]
    fn the_bootstrap_levels_split_600_seats_by_their_shares() {
        // exempt 0, catch-all 5, system 30, node-high 40, leader-election 10,
        // workload-high 40, workload-low 100, global-default 20: 245 shares in all.
        let shares = [0, 5, 30, 40, 10, 40, 100, 20];
        let total = DEFAULT_MAX_REQUESTS_INFLIGHT + DEFAULT_MAX_MUTATING_REQUESTS_INFLIGHT;
        assert_eq!(
            nominal_limits(total, &shares),
            vec![1, 13, 74, 98, 25, 98, 245, 49]
        );
    }

    #[test]
    fn a_level_never_gets_fewer_than_one_seat_and_huge_shares_do_not_overflow() {
        assert_eq!(nominal_limits(600, &[0, 0]), vec![1, 1]);
        assert_eq!(nominal_limits(10, &[1, 1_000_000]), vec![1, 10]);
        assert_eq!(
            nominal_limits(u32::MAX, &[u32::MAX, u32::MAX]),
            vec![u32::MAX / 2 + 1, u32::MAX / 2 + 1]
        );
    }

    #[test]
    fn dealing_gives_distinct_queues_within_the_deck() {
        for hash in [0, 1, 42, u64::MAX, flow_hash("global-default", "alice")] {
            for (deck, hand) in [
                (128, 6),
                (16, 4),
                (1, 1),
                (3, 8),
                (64, 64),
                (10_000_000, 1000),
            ] {
                let cards = deal(hash, deck, hand);
                assert_eq!(cards.len(), hand.min(deck).min(MAX_HAND_SIZE) as usize);
                let mut sorted = cards.clone();
                sorted.sort_unstable();
                sorted.dedup();
                assert_eq!(sorted.len(), cards.len(), "{hash} {deck} {hand}: {cards:?}");
                assert!(cards.iter().all(|&c| c < deck));
            }
        }
        assert_eq!(deal(0, 0, 6), Vec::<u32>::new());
    }

    #[test]
    fn flows_are_hashed_by_schema_and_distinguisher() {
        assert_eq!(flow_hash("a", "b"), flow_hash("a", "b"));
        assert_ne!(flow_hash("ab", ""), flow_hash("a", "b"));
        assert_ne!(flow_hash("a", "alice"), flow_hash("a", "bob"));
    }

    #[test]
    fn requests_execute_while_seats_are_free_then_wait() {
        let mut set = QueueSet::new(2, queued(4, 2, 10));
        assert!(matches!(set.offer(1, 1, "a"), Offer::Execute(_)));
        assert!(matches!(set.offer(1, 2, "b"), Offer::Execute(_)));
        assert!(matches!(set.offer(1, 3, "c"), Offer::Queued { .. }));
        assert_eq!((set.executing(), set.waiting()), (2, 1));
    }

    #[test]
    fn a_released_seat_starts_the_next_waiter() {
        let mut set = QueueSet::new(1, queued(4, 2, 10));
        let Offer::Execute(seat) = set.offer(1, 1, "a") else {
            panic!("first request must execute")
        };
        assert!(matches!(set.offer(1, 2, "b"), Offer::Queued { .. }));
        let started = set.release(seat);
        assert_eq!(started.iter().map(|s| s.1).collect::<Vec<_>>(), ["b"]);
        assert_eq!((set.executing(), set.waiting()), (1, 0));
        set.release(started[0].0);
        assert_eq!((set.executing(), set.waiting()), (0, 0));
    }

    #[test]
    fn a_full_queue_rejects_with_queue_full() {
        // One queue of two places, one seat.
        let mut set = QueueSet::new(1, queued(1, 1, 2));
        assert!(matches!(set.offer(7, 1, 1), Offer::Execute(_)));
        assert!(matches!(set.offer(7, 2, 2), Offer::Queued { queue: 0 }));
        assert!(matches!(set.offer(7, 3, 3), Offer::Queued { queue: 0 }));
        assert!(matches!(
            set.offer(7, 4, 4),
            Offer::Rejected(Reason::QueueFull, 4)
        ));
        assert_eq!(set.waiting(), 2);
    }

    #[test]
    fn a_reject_level_refuses_at_once_when_its_seats_are_taken() {
        let mut set = QueueSet::new(1, Response::Reject);
        let Offer::Execute(seat) = set.offer(1, 1, ()) else {
            panic!("first request must execute")
        };
        assert!(matches!(
            set.offer(1, 2, ()),
            Offer::Rejected(Reason::ConcurrencyLimit, ())
        ));
        set.release(seat);
        assert!(matches!(set.offer(1, 3, ()), Offer::Execute(_)));
    }

    #[test]
    fn an_exempt_level_never_waits() {
        let mut set = QueueSet::new(1, Response::Exempt);
        for t in 0..1000 {
            assert!(matches!(set.offer(t, t, ()), Offer::Execute(_)));
        }
        assert_eq!((set.executing(), set.waiting()), (1000, 0));
    }

    #[test]
    fn a_quiet_flow_gets_its_turn_behind_a_noisy_one() {
        // Two flows in disjoint queues (hand of one, so each flow has exactly one queue), one
        // seat. The noisy flow queues 50 requests, then the quiet one sends one.
        let (noisy, quiet) = two_flows_in_distinct_queues(64);
        let mut set = QueueSet::new(1, queued(64, 1, 100));
        let Offer::Execute(mut seat) = set.offer(noisy, 0, "noisy") else {
            panic!("first request must execute")
        };
        for t in 1..=50 {
            assert!(matches!(set.offer(noisy, t, "noisy"), Offer::Queued { .. }));
        }
        assert!(matches!(
            set.offer(quiet, 99, "quiet"),
            Offer::Queued { .. }
        ));
        // Within two releases the quiet request runs, not after the 50 noisy ones.
        let mut order = Vec::new();
        for _ in 0..2 {
            let started = set.release(seat);
            order.push(started[0].1);
            seat = started[0].0;
        }
        assert!(order.contains(&"quiet"), "{order:?}");
    }

    #[test]
    fn a_flow_joins_the_shortest_queue_of_its_hand() {
        let mut set = QueueSet::new(0, queued(8, 8, 100));
        // A hand of all eight queues: eight requests of one flow fill one queue each.
        let mut queues: Vec<u32> = (0..8)
            .map(|t| match set.offer(5, t, ()) {
                Offer::Queued { queue } => queue,
                other => panic!("{other:?}"),
            })
            .collect();
        queues.sort_unstable();
        assert_eq!(queues, (0..8).collect::<Vec<_>>());
    }

    #[test]
    fn a_cancelled_waiter_leaves_its_queue() {
        let mut set = QueueSet::new(0, queued(4, 2, 10));
        let Offer::Queued { queue } = set.offer(3, 11, "x") else {
            panic!("must wait with no seats")
        };
        assert_eq!(set.cancel(queue, 12), None);
        assert_eq!(set.cancel(queue, 11), Some("x"));
        assert_eq!(set.waiting(), 0);
        assert_eq!(set.cancel(99, 11), None);
    }

    #[test]
    fn raising_the_limit_starts_waiters_and_a_new_layout_keeps_them() {
        let mut set = QueueSet::new(0, queued(4, 2, 10));
        for t in 0..3 {
            set.offer(t, t, t);
        }
        assert!(set.reconfigure(0, queued(16, 4, 10)).is_empty());
        assert_eq!(set.waiting(), 3);
        let started = set.reconfigure(2, queued(16, 4, 10));
        assert_eq!(started.len(), 2);
        assert_eq!((set.executing(), set.waiting()), (2, 1));
        let started = set.reconfigure(2, Response::Exempt);
        assert_eq!(started.len(), 1);
        assert_eq!((set.executing(), set.waiting()), (3, 0));
    }

    #[test]
    fn a_seat_of_an_old_layout_is_still_given_back() {
        let mut set = QueueSet::new(1, queued(4, 2, 10));
        let Offer::Execute(seat) = set.offer(1, 1, ()) else {
            panic!("first request must execute")
        };
        set.reconfigure(1, queued(2, 1, 10));
        set.release(seat);
        assert_eq!(set.executing(), 0);
    }

    /// Two flow hashes whose one-card hands (hand size 1) are different queues.
    fn two_flows_in_distinct_queues(deck: u32) -> (u64, u64) {
        let a = flow_hash("fs", "noisy");
        let b = (0..)
            .map(|i| flow_hash("fs", &format!("quiet{i}")))
            .find(|&h| deal(h, deck, 1) != deal(a, deck, 1))
            .unwrap_or_default();
        (a, b)
    }
}
