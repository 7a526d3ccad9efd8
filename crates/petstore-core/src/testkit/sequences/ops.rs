//! The operations of a random sequence, and how they are drawn.

use proptest::prelude::*;

use crate::PetStatus;

/// One step of a random sequence. Indices pick among the pets and orders created so far
/// (deleted ones included, so some steps hit what is gone).
#[derive(Debug, Clone)]
pub enum Op {
    /// Create a pet (with the default status).
    CreatePet,
    /// Set a pet's stock.
    SetStock {
        /// Which pet.
        pet: usize,
        /// The new level.
        level: u32,
    },
    /// Adjust a pet's stock by some units, expecting the level the test last saw or not.
    Adjust {
        /// Which pet.
        pet: usize,
        /// Units in (positive) or out.
        units: i32,
        /// Whether to name the level last seen (`changeFromQuantity`).
        expect: bool,
    },
    /// Check out 1 to 3 lines at once (pets picked from `first` on, one line each).
    Checkout {
        /// Which pet line 1 is for.
        first: usize,
        /// Units per line.
        units: Vec<u32>,
    },
    /// Place an order.
    Place {
        /// Which pet.
        pet: usize,
        /// How many units.
        units: u32,
    },
    /// Complete an order.
    Complete {
        /// Which order.
        order: usize,
    },
    /// Cancel an order.
    Cancel {
        /// Which order.
        order: usize,
    },
    /// Delete a pet.
    DeletePet {
        /// Which pet.
        pet: usize,
    },
    /// Staff set a pet's status by hand.
    SetStatus {
        /// Which pet.
        pet: usize,
        /// The status.
        status: PetStatus,
    },
    /// Hold 1 to 3 lines (as a checkout picks them) for a few seconds.
    PlaceHold {
        /// Which pet line 1 is for.
        first: usize,
        /// Units per line.
        units: Vec<u32>,
        /// Its life, in seconds.
        life: u32,
    },
    /// Release a hold.
    ReleaseHold {
        /// Which hold.
        hold: usize,
    },
    /// Check a hold out.
    CheckOutHold {
        /// Which hold.
        hold: usize,
    },
    /// Let time pass.
    Tick {
        /// Seconds.
        seconds: u32,
    },
    /// Run the sweeper: end every hold whose expiry has come.
    Sweep,
}

/// The random operations, weighted towards orders.
pub fn op() -> impl Strategy<Value = Op> {
    let index = 0usize..8;
    prop_oneof![
        2 => Just(Op::CreatePet),
        3 => (index.clone(), 0u32..6).prop_map(|(pet, level)| Op::SetStock { pet, level }),
        2 => (index.clone(), prop::sample::select(vec![-3, -2, -1, 1, 2, 4]), any::<bool>())
            .prop_map(|(pet, units, expect)| Op::Adjust { pet, units, expect }),
        5 => (index.clone(), 1u32..4).prop_map(|(pet, units)| Op::Place { pet, units }),
        3 => (index.clone(), prop::collection::vec(1u32..4, 1..4))
            .prop_map(|(first, units)| Op::Checkout { first, units }),
        2 => index.clone().prop_map(|order| Op::Complete { order }),
        2 => index.clone().prop_map(|order| Op::Cancel { order }),
        1 => index.clone().prop_map(|pet| Op::DeletePet { pet }),
        1 => (index.clone(), prop::sample::select(PetStatus::ALL.to_vec()))
            .prop_map(|(pet, status)| Op::SetStatus { pet, status }),
        3 => (index.clone(), prop::collection::vec(1u32..4, 1..4), 1u32..4)
            .prop_map(|(first, units, life)| Op::PlaceHold { first, units, life }),
        1 => index.clone().prop_map(|hold| Op::ReleaseHold { hold }),
        3 => index.prop_map(|hold| Op::CheckOutHold { hold }),
        3 => (1u32..3).prop_map(|seconds| Op::Tick { seconds }),
        1 => Just(Op::Sweep),
    ]
}
