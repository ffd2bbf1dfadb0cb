//! The longest nap a consumer may take so that the messages it keeps
//! waiting past the latency bound stay a small share, judged from what
//! its recent naps' wake-ups took (their spread, not their median). What
//! does not live here: when a consumer naps at all (`adaptive.rs`).
//!
//! A consumer that naps for `y` with the queue empty and wakes `x` late
//! finds the messages of `y + x` queued, and drains them while more
//! arrive: at the producer's pace `pace` and its own work `own`, its
//! cycle handles `(y + x) / (pace - own)` messages. The first waited
//! about `y + x + ahead` (`ahead`: the work before its release), each
//! later one `pace - own` less, so `(y + x + ahead - bound) / (pace -
//! own)` of them wait past the bound, and over the naps seen the share of
//! messages past the bound is
//!
//! ```text
//! sum max(0, y + x_i + ahead - bound) / sum (y + x_i)
//! ```
//!
//! whatever the paces. It grows with `y`; [`longest_nap`] is the `y`
//! where it reaches the share allowed. Every wake-up counts, a stall of
//! the machine too: its messages wait past the bound however short the
//! nap, and where the stalls alone keep more than the share there is no
//! nap to take (the consumer spins, and times a short nap now and then
//! to see whether the stalls have passed).

/// The longest nap [ps] whose wake-ups, were they those in `late` [ps],
/// would keep at most `share` of the messages waiting past `bound` [ps],
/// where `ahead` [ps] of work comes before the first message's release.
/// `None` where even a nap of nothing would keep more than that (or
/// `late` is empty).
#[must_use]
pub fn longest_nap(late: &[f64], bound: f64, ahead: f64, share: f64) -> Option<f64> {
    let mut xs: Vec<f64> = late.to_vec();
    if xs.is_empty() {
        return None;
    }
    // Latest first: each in turn starts to keep messages past the bound
    // once the nap passes its threshold, bound - ahead - x (below 0 for
    // a stall: past it from the start).
    xs.sort_by(|a, b| b.total_cmp(a));
    #[allow(clippy::cast_precision_loss)]
    let n = xs.len() as f64;
    let sum_x: f64 = xs.iter().sum();
    let threshold = |x: f64| bound - ahead - x;
    // The excess, sum (y - t_i)+ - share sum (y + x_i), at y = 0.
    let stalled: f64 = xs.iter().map(|&x| (-threshold(x)).max(0.0)).sum();
    if stalled > share * sum_x {
        return None;
    }
    let mut sum_t = 0.0;
    for (k, &x) in xs.iter().enumerate() {
        sum_t += threshold(x);
        // With the first k + 1 past their thresholds, the excess is zero
        // at:
        #[allow(clippy::cast_precision_loss)]
        let slope = (k + 1) as f64 - share * n;
        if slope <= 0.0 {
            continue;
        }
        let y = (sum_t + share * sum_x) / slope;
        let next = xs.get(k + 1).map_or(f64::INFINITY, |&x| threshold(x));
        if y <= next {
            return Some(y.max(0.0));
        }
    }
    // Unreachable for share < 1 (the last slope is positive and the last
    // segment unbounded); a share of 1 or more allows any nap.
    Some(f64::INFINITY)
}

#[cfg(test)]
mod tests {
    use super::longest_nap;

    /// The share of messages past the bound, were naps of `y` to wake
    /// as `late` less its latest says.
    fn share_past(late: &[f64], bound: f64, ahead: f64, y: f64) -> f64 {
        let past: f64 = late.iter().map(|x| (y + x + ahead - bound).max(0.0)).sum();
        let all: f64 = late.iter().map(|x| y + x).sum();
        past / all
    }

    #[test]
    fn alike_wake_ups_allow_a_nap_to_the_bound_and_the_share_past_it() {
        // Every nap 30 late, 2 of work ahead, bound 100: past 68 every
        // nap's first messages wait too long; the share allows a little.
        let y = longest_nap(&[30.0; 8], 100.0, 2.0, 0.005).unwrap();
        assert!((68.0..69.0).contains(&y), "{y}");
        assert!((share_past(&[30.0; 8], 100.0, 2.0, y) - 0.005).abs() < 1e-12);
    }

    #[test]
    fn a_spread_of_wake_ups_shortens_the_nap_to_what_keeps_the_share() {
        let late = [10.0, 20.0, 20.0, 25.0, 30.0, 30.0, 40.0, 70.0];
        let y = longest_nap(&late, 100.0, 2.0, 0.005).unwrap();
        // The latest decides: a nap past 28 keeps its first messages too
        // long, and a little past it is allowed (30.4).
        assert!((28.0..31.0).contains(&y), "{y}");
        assert!((share_past(&late, 100.0, 2.0, y) - 0.005).abs() < 1e-12);
        // A looser share lets more wake-ups run past it.
        let loose = longest_nap(&late, 100.0, 2.0, 0.2).unwrap();
        assert!(loose > 40.0, "{loose}");
        assert!((share_past(&late, 100.0, 2.0, loose) - 0.2).abs() < 1e-12);
    }

    #[test]
    fn stalls_spend_the_share_and_more_of_them_allow_no_nap() {
        let alike = longest_nap(&[20.0; 32], 100.0, 2.0, 0.005).unwrap();
        // One stall 101 late among 32: it keeps messages past the bound
        // whatever the nap (3 us of them, where the share allows 3.6 at
        // a nap of nothing), so little is left for the nap (0.7).
        let mut late = [20.0; 32];
        late[3] = 101.0;
        let one = longest_nap(&late, 100.0, 2.0, 0.005).unwrap();
        assert!(one > 0.0 && one < alike, "{one} {alike}");
        assert!((share_past(&late, 100.0, 2.0, one) - 0.005).abs() < 1e-12);
        // A stall of milliseconds: no nap keeps the share.
        late[5] = 5000.0;
        assert_eq!(longest_nap(&late, 100.0, 2.0, 0.005), None);
        assert_eq!(longest_nap(&[], 100.0, 2.0, 0.005), None);
    }
}
