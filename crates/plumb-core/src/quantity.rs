//! Kubernetes resource quantities (`500m`, `1Gi`, `1e3`) and their canonical form,
//! as `resource.Quantity.String()` prints it: `1000m` → `1`, `0.5` → `500m`,
//! `1024Mi` → `1Gi`.

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Format {
    DecimalSI,
    BinarySI,
    DecimalExponent,
}

/// A parsed quantity: `mantissa × 10^exp`, plus the format its suffix implies.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Quantity {
    mantissa: i128,
    exp: i32,
    format: Format,
}

const BINARY: [(&str, u32); 6] = [
    ("Ki", 10),
    ("Mi", 20),
    ("Gi", 30),
    ("Ti", 40),
    ("Pi", 50),
    ("Ei", 60),
];
const DECIMAL: [(&str, i32); 10] = [
    ("n", -9),
    ("u", -6),
    ("m", -3),
    ("", 0),
    ("k", 3),
    ("M", 6),
    ("G", 9),
    ("T", 12),
    ("P", 15),
    ("E", 18),
];

impl Quantity {
    /// Parses a quantity string; `None` when it is not one.
    pub fn parse(s: &str) -> Option<Quantity> {
        let bytes = s.as_bytes();
        let mut i = 0;
        let negative = match bytes.first() {
            Some(b'-') => {
                i = 1;
                true
            }
            Some(b'+') => {
                i = 1;
                false
            }
            _ => false,
        };
        let mut mantissa: i128 = 0;
        let mut exp: i32 = 0;
        let mut digits = 0;
        while i < bytes.len() && bytes[i].is_ascii_digit() {
            mantissa = mantissa
                .checked_mul(10)?
                .checked_add(i128::from(bytes[i] - b'0'))?;
            i += 1;
            digits += 1;
        }
        if i < bytes.len() && bytes[i] == b'.' {
            i += 1;
            while i < bytes.len() && bytes[i].is_ascii_digit() {
                mantissa = mantissa
                    .checked_mul(10)?
                    .checked_add(i128::from(bytes[i] - b'0'))?;
                exp -= 1;
                i += 1;
                digits += 1;
            }
        }
        if digits == 0 {
            return None;
        }
        let suffix = &s[i..];
        let format;
        if let Some(&(_, shift)) = BINARY.iter().find(|(n, _)| *n == suffix) {
            format = Format::BinarySI;
            mantissa = mantissa.checked_mul(1i128 << shift)?;
        } else if let Some(&(_, e)) = DECIMAL.iter().find(|(n, _)| *n == suffix) {
            format = Format::DecimalSI;
            exp += e;
        } else if let Some(rest) = suffix.strip_prefix(['e', 'E']) {
            let e: i32 = rest.parse().ok()?;
            if !rest
                .trim_start_matches(['+', '-'])
                .chars()
                .all(|c| c.is_ascii_digit())
            {
                return None;
            }
            format = Format::DecimalExponent;
            exp = exp.checked_add(e)?;
        } else {
            return None;
        }
        if negative {
            mantissa = -mantissa;
        }
        let mut q = Quantity {
            mantissa,
            exp,
            format,
        };
        q.round_to_nano();
        Some(q)
    }

    /// Parses a JSON value as `resource.Quantity.UnmarshalJSON` does (string or number).
    pub fn from_json(v: &serde_json::Value) -> Option<Quantity> {
        match v {
            serde_json::Value::String(s) => Quantity::parse(s),
            serde_json::Value::Number(n) => Quantity::parse(&n.to_string()),
            _ => None,
        }
    }

    fn round_to_nano(&mut self) {
        // Quantities keep at most nano precision, rounding away from zero.
        while self.exp < -9 {
            let (q, r) = (self.mantissa / 10, self.mantissa % 10);
            self.mantissa = if r > 0 {
                q + 1
            } else if r < 0 {
                q - 1
            } else {
                q
            };
            self.exp += 1;
        }
    }

    fn integral(&self) -> Option<i128> {
        let mut m = self.mantissa;
        let mut e = self.exp;
        while e < 0 {
            if m % 10 != 0 {
                return None;
            }
            m /= 10;
            e += 1;
        }
        while e > 0 {
            m = m.checked_mul(10)?;
            e -= 1;
        }
        Some(m)
    }

    /// The canonical string form.
    pub fn canonical(&self) -> String {
        if self.mantissa == 0 {
            return "0".to_string();
        }
        if self.format == Format::BinarySI
            && let Some(mut v) = self.integral()
            && !(-1024 < v && v < 1024)
        {
            let mut e = 0;
            while v % 1024 == 0 && e < 6 {
                v /= 1024;
                e += 1;
            }
            let suffix = if e == 0 { "" } else { BINARY[e - 1].0 };
            return format!("{v}{suffix}");
        }
        let (mut m, mut e) = (self.mantissa, self.exp);
        while m % 10 == 0 {
            m /= 10;
            e += 1;
        }
        while e.rem_euclid(3) != 0 {
            m *= 10;
            e -= 1;
        }
        if self.format == Format::DecimalExponent {
            return if e == 0 {
                m.to_string()
            } else {
                format!("{m}e{e}")
            };
        }
        while e > 18 {
            m *= 1000;
            e -= 3;
        }
        let suffix = DECIMAL.iter().find(|(_, x)| *x == e).map_or("", |(n, _)| n);
        format!("{m}{suffix}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn canon(s: &str) -> String {
        Quantity::parse(s)
            .map(|q| q.canonical())
            .unwrap_or_else(|| format!("invalid:{s}"))
    }

    #[test]
    fn canonical_forms_match_kubernetes() {
        for (input, want) in [
            ("1000m", "1"),
            ("0.5", "500m"),
            ("0.2", "200m"),
            ("1024Mi", "1Gi"),
            ("1536Mi", "1536Mi"),
            ("1.5Gi", "1536Mi"),
            ("2000m", "2"),
            ("1.5", "1500m"),
            ("1.5k", "1500"),
            ("15000", "15k"),
            ("100Mi", "100Mi"),
            ("0.5Ki", "512"),
            ("1025", "1025"),
            ("128974848", "128974848"),
            ("129e6", "129e6"),
            ("1e3", "1e3"),
            ("1.25G", "1250M"),
            ("0", "0"),
            ("0Mi", "0"),
            ("-500m", "-500m"),
            ("0.0000000001", "1n"),
            ("50m", "50m"),
        ] {
            assert_eq!(canon(input), want, "{input}");
        }
    }

    #[test]
    fn rejects_non_quantities() {
        for bad in ["invalid", "", "1Xi", "m", "1.2.3", "1e", "1ee3", " 1"] {
            assert!(Quantity::parse(bad).is_none(), "{bad}");
        }
    }

    #[test]
    fn json_numbers_are_quantities() {
        let q = Quantity::from_json(&serde_json::json!(0.2)).unwrap();
        assert_eq!(q.canonical(), "200m");
    }
}
