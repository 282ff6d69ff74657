//! What a stage passes on of its input: the input's own value, borrowed, or a copy the
//! stage changed. The copy is boxed so that a vector of them (a view of records, a
//! message's blocks), mostly borrowed, holds two-word entries and moves cheaply.

use serde::Serialize;

#[derive(Debug, Clone, PartialEq)]
pub enum Shown<'a, T> {
    Kept(&'a T),
    Changed(Box<T>),
}

impl<T: Clone> Shown<'_, T> {
    /// A value of the stage's own making.
    pub fn new(v: T) -> Self {
        Shown::Changed(Box::new(v))
    }

    /// The value to change, copied out of the input first if still borrowed.
    pub(crate) fn to_mut(&mut self) -> &mut T {
        if let Shown::Kept(v) = *self {
            *self = Shown::new(v.clone());
        }
        match self {
            Shown::Changed(v) => v,
            // Made `Changed` just above (the same dance as `Cow::to_mut`).
            Shown::Kept(_) => unreachable!(),
        }
    }

    /// The value itself, copied out of the input when borrowed.
    pub fn into_owned(self) -> T {
        match self {
            Shown::Kept(v) => v.clone(),
            Shown::Changed(v) => *v,
        }
    }
}

impl<T> std::ops::Deref for Shown<'_, T> {
    type Target = T;
    fn deref(&self) -> &T {
        match self {
            Shown::Kept(v) => v,
            Shown::Changed(v) => v,
        }
    }
}

impl<T> AsRef<T> for Shown<'_, T> {
    fn as_ref(&self) -> &T {
        self
    }
}

impl<T> std::borrow::Borrow<T> for Shown<'_, T> {
    fn borrow(&self) -> &T {
        self
    }
}

impl<T: Serialize> Serialize for Shown<'_, T> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        (**self).serialize(s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_kept_value_is_copied_once_changed_and_never_before() {
        let original = String::from("record");
        let mut shown = Shown::Kept(&original);
        assert!(matches!(shown, Shown::Kept(v) if std::ptr::eq(v, &original)));
        shown.to_mut().push_str(" changed");
        assert_eq!(*shown, "record changed");
        assert_eq!(original, "record");
        assert!(matches!(shown, Shown::Changed(_)));
        assert_eq!(Shown::Kept(&original).into_owned(), "record");
        assert_eq!(shown.into_owned(), "record changed");
    }
}
