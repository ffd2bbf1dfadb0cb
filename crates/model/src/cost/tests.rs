//! The cost types' tests: parsing, checking, means, display.

use super::*;
use proptest::prelude::*;

fn ph(parts: &[(Cost, u64)]) -> Cost {
    let parts: Vec<_> = parts
        .iter()
        .map(|&(c, n)| (c.simple().unwrap(), n))
        .collect();
    Cost::Phases(Phases::new(&parts).unwrap())
}

fn mix(p: f64, a: Cost, b: Cost) -> Cost {
    Cost::Mix(Mix {
        p,
        first: a.simple().unwrap(),
        second: b.simple().unwrap(),
    })
}

#[test]
fn parses_phases_and_mix() {
    assert_eq!(
        Cost::parse("phases:0.5us@5000+3us@5000").unwrap(),
        ph(&[(Cost::Const(500.0), 5000), (Cost::Const(3000.0), 5000)])
    );
    assert_eq!(
        Cost::parse(" Phases: exp:1us@1000 + uniform:1us,2us@3000 + lognormal:1us,0.5@7 ").unwrap(),
        ph(&[
            (Cost::Exp { mean_ns: 1000.0 }, 1000),
            (
                Cost::Uniform {
                    lo_ns: 1000.0,
                    hi_ns: 2000.0
                },
                3000
            ),
            (
                Cost::LogNormal {
                    mean_ns: 1000.0,
                    sigma: 0.5
                },
                7
            ),
        ])
    );
    // Four phases, the most; a `+` in an exponent is part of the number.
    let c = Cost::parse("phases:1e+3ns@1+2us@2+normal:3us,1us@3+const:4us@4").unwrap();
    let Cost::Phases(p) = c else { panic!() };
    assert_eq!(p.parts().len(), 4);
    assert_eq!(p.parts()[0], (SimpleCost::Const(1000.0), 1));
    assert_eq!(p.total(), 10);
    assert_eq!(
        Cost::parse("mix:0.01:1us+50us").unwrap(),
        mix(0.01, Cost::Const(1000.0), Cost::Const(50_000.0))
    );
    assert_eq!(
        Cost::parse("MIX:1:exp:1us+normal:2us,0.5us").unwrap(),
        mix(
            1.0,
            Cost::Exp { mean_ns: 1000.0 },
            Cost::Normal {
                mu_ns: 2000.0,
                sd_ns: 500.0
            }
        )
    );
    assert!(Cost::parse("mix:0:1us+2us").is_ok());
}

#[test]
fn rejects_bad_phases_and_mix() {
    let err = |s: &str| match Cost::parse(s) {
        Err(CostParseError::Invalid(m)) => m,
        other => panic!("{s}: {other:?}"),
    };
    let m = err("phases:1us@1+2us@1+3us@1+4us@1+5us@1");
    assert!(m.contains("2 to 4 phases, not 5"), "{m}");
    let m = err("phases:1us@1");
    assert!(m.contains("2 to 4 phases, not 1"), "{m}");
    let m = err("phases:1us@0+2us@1");
    assert!(m.contains("count `0`"), "{m}");
    let m = err("phases:1us@-1+2us@1");
    assert!(m.contains("integer >= 1"), "{m}");
    let m = err("phases:1us@1.5+2us@1");
    assert!(m.contains("integer >= 1"), "{m}");
    let m = err("phases:1us+2us@1");
    assert!(m.contains("no `@<count>`"), "{m}");
    let m = err("phases:");
    assert!(m.contains("no `@<count>`"), "{m}");
    let m = err("phases:phases:1us@1+2us@2@3+1us@1");
    assert!(m.contains("`phases` cannot be nested in `phases`"), "{m}");
    let m = err("phases:mix:0.5:1us+2us@3+1us@1");
    assert!(m.contains("`mix` cannot be nested in `phases`"), "{m}");
    let m = err("mix:0.5:phases:1us@1+2us@1");
    assert!(m.contains("`phases` cannot be nested in `mix`"), "{m}");
    let m = err("mix:0.5:mix:0.5:1us+2us");
    assert!(m.contains("`mix` cannot be nested in `mix`"), "{m}");
    for p in ["1.5", "-0.1", "NaN", "inf", "x", ""] {
        let m = err(&format!("mix:{p}:1us+2us"));
        assert!(m.contains("from 0 to 1"), "{p}: {m}");
    }
    let m = err("mix:0.5:1us");
    assert!(m.contains("exactly two distributions, not 1"), "{m}");
    let m = err("mix:0.5:1us+2us+3us");
    assert!(m.contains("exactly two distributions, not 3"), "{m}");
    let m = err("mix:1us+2us");
    assert!(m.contains("probability and two distributions"), "{m}");
    let m = err("phases:uniform:2us,1us@1+1us@1");
    assert!(m.contains("lo <= hi"), "{m}");
    // The parts' own errors come through.
    assert!(matches!(
        Cost::parse("phases:gamma:1us@1+1us@1"),
        Err(CostParseError::UnknownDist(_))
    ));
    assert!(matches!(
        Cost::parse("mix:0.5:1us+-2us"),
        Err(CostParseError::Duration(_))
    ));
    let m = Cost::parse("gamma:1us").unwrap_err().to_string();
    assert!(m.contains("phases or mix"), "{m}");
    // check() refuses what parse would.
    let Cost::Mix(mut m) = mix(0.5, Cost::Const(1.0), Cost::Const(2.0)) else {
        unreachable!()
    };
    m.p = 1.01;
    assert!(Cost::Mix(m).check().is_err());
    m.p = 0.5;
    m.second = SimpleCost::Exp { mean_ns: -1.0 };
    assert!(Cost::Mix(m).check().is_err());
    assert!(Phases::new(&[(SimpleCost::Const(1.0), 1)]).is_err());
    assert!(Phases::new(&[
        (SimpleCost::Const(1.0), u64::MAX),
        (SimpleCost::Const(1.0), 1)
    ])
    .is_err());
}

#[test]
fn compound_means_and_shapes() {
    let p = Cost::parse("phases:0.5us@5000+3us@5000").unwrap();
    assert_eq!(p.mean_ns(), 1750.0);
    let p = Cost::parse("phases:exp:1us@1000+2us@3000").unwrap();
    assert_eq!(p.mean_ns(), 1750.0);
    let m = Cost::parse("mix:0.01:1us+50us").unwrap();
    assert!((m.mean_ns() - 1490.0).abs() < 1e-9, "{}", m.mean_ns());
    // Equal means are exact, whatever the weights.
    assert_eq!(
        Cost::parse("phases:0.1ns@3+exp:0.1ns@7").unwrap().mean_ns(),
        0.1
    );
    assert_eq!(
        Cost::parse("mix:0.3:0.1ns+exp:0.1ns").unwrap().mean_ns(),
        0.1
    );

    assert!(!p.is_const());
    assert!(!m.is_const());
    assert!(Cost::parse("phases:1us@3+const:1000ns@2")
        .unwrap()
        .is_const());
    assert!(!Cost::parse("phases:1us@3+exp:1us@2").unwrap().is_const());
    assert!(Cost::parse("mix:0.5:1us+1us").unwrap().is_const());
    assert!(Cost::parse("mix:0:1us+exp:1us").unwrap().is_const());
    assert!(Cost::parse("mix:1:exp:1us+1us").unwrap().is_const());
    assert!(!Cost::parse("mix:1:1us+exp:1us").unwrap().is_const());

    let Cost::Phases(ph) = Cost::parse("phases:1ns@3+2ns@2").unwrap() else {
        unreachable!()
    };
    let phases: Vec<usize> = (0..11).map(|i| ph.phase_of(i)).collect();
    assert_eq!(phases, [0, 0, 0, 1, 1, 0, 0, 0, 1, 1, 0]);

    // Scaling keeps the shape and sets the mean.
    for c in [p, m] {
        let d = c.with_mean(3500.0);
        assert!((d.mean_ns() - 3500.0).abs() < 1e-9, "{c} -> {d}");
        assert_eq!(std::mem::discriminant(&c), std::mem::discriminant(&d));
        d.check().unwrap();
    }
    assert_eq!(
        Cost::parse("phases:0.5us@5+3us@5")
            .unwrap()
            .with_mean(3500.0),
        Cost::parse("phases:1us@5+6us@5").unwrap()
    );
    assert_eq!(
        Cost::parse("phases:0.5us@5+3us@5").unwrap().plus(100.0),
        Cost::parse("phases:0.6us@5+3.1us@5").unwrap()
    );
}

#[test]
fn compound_serde_round_trips() {
    for s in [
        "phases:0.5us@5000+exp:3us@5000",
        "mix:0.01:1us+lognormal:50us,0.5",
    ] {
        let c = Cost::parse(s).unwrap();
        let j = serde_json::to_string(&c).unwrap();
        assert_eq!(serde_json::from_str::<Cost>(&j).unwrap(), c, "{j}");
    }
}

fn simple() -> impl Strategy<Value = Cost> {
    let ns = 0.0f64..1e7;
    prop_oneof![
        ns.clone().prop_map(Cost::Const),
        (ns.clone(), 0.0f64..1e6).prop_map(|(a, d)| Cost::Uniform {
            lo_ns: a,
            hi_ns: a + d
        }),
        ns.clone().prop_map(|m| Cost::Exp { mean_ns: m }),
        (ns.clone(), 0.0f64..1e6).prop_map(|(m, sd)| Cost::Normal {
            mu_ns: m,
            sd_ns: sd
        }),
        (ns, 0.0f64..=MAX_LOG_SIGMA).prop_map(|(m, s)| Cost::LogNormal {
            mean_ns: m,
            sigma: s
        }),
    ]
}

fn any_cost() -> impl Strategy<Value = Cost> {
    prop_oneof![
        simple(),
        proptest::collection::vec((simple(), 1u64..u64::MAX / 4), 2..=MAX_PHASES)
            .prop_map(|v| ph(&v)),
        (
            prop_oneof![Just(0.0), Just(1.0), 0.0f64..=1.0],
            simple(),
            simple()
        )
            .prop_map(|(p, a, b)| mix(p, a, b)),
    ]
}

proptest! {
    #[test]
    fn spec_round_trips_for_any_cost(c in any_cost()) {
        prop_assert_eq!(Cost::parse(&c.spec()).unwrap(), c);
        let d = Cost::parse(&c.to_string()).unwrap();
        prop_assert_eq!(std::mem::discriminant(&d), std::mem::discriminant(&c));
        prop_assert!(c.mean_ns().is_finite() && c.mean_ns() >= 0.0);
    }
}

#[test]
fn parses_every_form() {
    assert_eq!(Cost::parse("const:1us").unwrap(), Cost::Const(1000.0));
    assert_eq!(
        Cost::parse("uniform:0.8us,1.2us").unwrap(),
        Cost::Uniform {
            lo_ns: 800.0,
            hi_ns: 1200.0
        }
    );
    assert_eq!(
        Cost::parse("exp:1us").unwrap(),
        Cost::Exp { mean_ns: 1000.0 }
    );
    assert_eq!(
        Cost::parse("normal:1us,0.1us").unwrap(),
        Cost::Normal {
            mu_ns: 1000.0,
            sd_ns: 100.0
        }
    );
    assert_eq!(
        Cost::parse("lognormal:1us,0.2").unwrap(),
        Cost::LogNormal {
            mean_ns: 1000.0,
            sigma: 0.2
        }
    );
}

#[test]
fn rejects_bad_forms() {
    assert!(matches!(
        Cost::parse("gamma:1us"),
        Err(CostParseError::UnknownDist(_))
    ));
    assert!(matches!(
        Cost::parse("uniform:1us"),
        Err(CostParseError::Arity { .. })
    ));
    assert!(matches!(
        Cost::parse("uniform:2us,1us"),
        Err(CostParseError::Invalid(_))
    ));
    assert!(matches!(
        Cost::parse("lognormal:1us,x"),
        Err(CostParseError::BadNumber(_))
    ));
    assert!(matches!(
        Cost::parse("exp:-1us"),
        Err(CostParseError::Duration(_))
    ));
    assert!(Cost::parse("lognormal:1us,NaN").is_err());
    // A spread whose mean a million draws would not reach.
    assert!(Cost::parse("lognormal:1us,3").is_ok());
    assert!(matches!(
        Cost::parse("lognormal:1us,3.5"),
        Err(CostParseError::Invalid(_))
    ));
}

#[test]
fn means() {
    assert_eq!(
        Cost::Uniform {
            lo_ns: 800.0,
            hi_ns: 1200.0
        }
        .mean_ns(),
        1000.0
    );
    // Truncation at 0 of N(0, 1): mean sqrt(2/pi).
    let m = Cost::Normal {
        mu_ns: 0.0,
        sd_ns: 1.0,
    }
    .mean_ns();
    assert!(
        (m - (2.0 / std::f64::consts::PI).sqrt()).abs() < 1e-12,
        "{m}"
    );
    // Far from 0 truncation changes nothing measurable.
    assert!(
        (Cost::Normal {
            mu_ns: 1000.0,
            sd_ns: 100.0
        }
        .mean_ns()
            - 1000.0)
            .abs()
            < 1e-9
    );
}

#[test]
fn spec_round_trips_exactly() {
    for c in [
        Cost::Const(1100.1234567),
        Cost::Uniform {
            lo_ns: 0.1,
            hi_ns: 0.3,
        },
        Cost::Exp { mean_ns: 1e-3 },
        Cost::Normal {
            mu_ns: 1000.0,
            sd_ns: 33.3,
        },
        Cost::LogNormal {
            mean_ns: 7.0,
            sigma: 0.25,
        },
        ph(&[
            (Cost::Const(0.1), 1),
            (Cost::Exp { mean_ns: 1e-3 }, u64::MAX / 2),
        ]),
        mix(
            0.123_456_789,
            Cost::Const(1100.1234567),
            Cost::Exp { mean_ns: 7.5 },
        ),
    ] {
        assert_eq!(Cost::parse(&c.spec()).unwrap(), c);
    }
}

#[test]
fn plus_raises_the_mean() {
    for c in [
        Cost::Const(100.0),
        Cost::Uniform {
            lo_ns: 50.0,
            hi_ns: 150.0,
        },
        Cost::Exp { mean_ns: 100.0 },
        Cost::Normal {
            mu_ns: 100.0,
            sd_ns: 30.0,
        },
        Cost::LogNormal {
            mean_ns: 100.0,
            sigma: 0.3,
        },
        Cost::parse("phases:100ns@3+exp:50ns@2+normal:10ns,30ns@9").unwrap(),
        Cost::parse("mix:0.2:uniform:50ns,150ns+lognormal:1us,0.5").unwrap(),
    ] {
        let d = c.plus(25.0);
        assert!(
            (d.mean_ns() - c.mean_ns() - 25.0).abs() < 1e-9,
            "{c} -> {d}"
        );
        d.check().unwrap();
    }
}

#[test]
fn display_round_trips() {
    for s in [
        "1.1us",
        "uniform:800ns,1.2us",
        "exp:1us",
        "normal:1us,100ns",
        "lognormal:1us,0.2",
        "phases:500ns@5000+uniform:3us,4us@5000",
        "phases:exp:1us@1000+2us@3000+normal:1us,100ns@1+lognormal:1us,0.2@2",
        "mix:0.01:1us+50us",
        "mix:0.5:exp:1us+normal:1us,100ns",
    ] {
        let c = Cost::parse(s).unwrap();
        assert_eq!(Cost::parse(&c.to_string()).unwrap(), c, "{s}");
    }
}
