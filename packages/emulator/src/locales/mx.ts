/** Words for contacts from Mexico (es-MX). People carry two surnames. */
import type { LocaleWords } from '../locale-words.js';

export const MX: LocaleWords = {
  country: 'MX',
  weight: 15,
  tld: 'com.mx',
  linkGreeting: '¡Hola! Quiero saber más sobre',
  firstNames: [
    'José', 'Juan', 'Luis', 'Carlos', 'Jorge', 'Miguel', 'Alejandro', 'Francisco', 'Fernando', 'Ricardo',
    'Eduardo', 'Roberto', 'Javier', 'Daniel', 'Sergio', 'Arturo', 'Raúl', 'Héctor', 'Óscar', 'Manuel',
    'Diego', 'Santiago', 'Emiliano', 'Mateo', 'Sebastián', 'Andrés', 'Rodrigo', 'Iván', 'Gerardo', 'Alberto',
    'José Luis', 'Juan Carlos', 'Luis Ángel', 'Jesús', 'Pedro', 'Rafael', 'Ernesto', 'Gustavo', 'Hugo', 'Adrián',
    'María', 'Guadalupe', 'Juana', 'Margarita', 'Verónica', 'Leticia', 'Rosa', 'Alejandra', 'Gabriela', 'Patricia',
    'Adriana', 'Claudia', 'Mónica', 'Sofía', 'Valeria', 'Ximena', 'Regina', 'Camila', 'Fernanda', 'Daniela',
    'Andrea', 'Paola', 'Karla', 'Diana', 'Lucía', 'Elena', 'Martha', 'Silvia', 'Lorena', 'Itzel',
    'María José', 'Ana Sofía', 'Xóchitl', 'Citlali', 'Natalia', 'Renata', 'Mariana', 'Brenda', 'Yolanda', 'Araceli',
  ],
  lastNames: [
    'Hernández', 'García', 'Martínez', 'López', 'González', 'Pérez', 'Rodríguez', 'Sánchez', 'Ramírez', 'Cruz',
    'Flores', 'Gómez', 'Morales', 'Vázquez', 'Reyes', 'Jiménez', 'Torres', 'Díaz', 'Gutiérrez', 'Ruiz',
    'Mendoza', 'Aguilar', 'Ortiz', 'Moreno', 'Castillo', 'Romero', 'Álvarez', 'Méndez', 'Chávez', 'Rivera',
    'Juárez', 'Ramos', 'Domínguez', 'Herrera', 'Medina', 'Castro', 'Vargas', 'Guzmán', 'Velázquez', 'Muñoz',
    'Rojas', 'Contreras', 'Salazar', 'Luna', 'Ortega', 'Guerrero', 'Estrada', 'Bautista', 'Cortés', 'Soto',
    'Alvarado', 'Espinoza', 'Lara', 'Ávila', 'Ríos', 'Cervantes', 'Silva', 'Delgado', 'Vega', 'Navarro',
  ],
  doubleSurname: 1,
  freeEmailDomains: ['gmail.com', 'hotmail.com', 'outlook.com', 'yahoo.com.mx', 'live.com.mx', 'prodigy.net.mx'],
  companyPatterns: ['{last} y {last2} S.C.', '{word} {sector}', '{word} {sector} S.A. de C.V.', '{sector} {last}', 'Grupo {last}', '{last} {sector} S. de R.L.', '{word} {sector} del Bajío'],
  companyWords: ['Azteca', 'Sierra', 'Pacífico', 'Maya', 'Norte', 'Valle', 'Alianza', 'Condor', 'Jade', 'Sol', 'Águila', 'Monterrey', 'Cumbre', 'Plata', 'Quetzal', 'Laguna', 'Centro', 'Faro', 'Olmeca', 'Cielo'],
  sectors: ['Logística', 'Tecnología', 'Consultores', 'Alimentos', 'Ingeniería', 'Transportes', 'Salud', 'Educación', 'Inmobiliaria', 'Distribuidora', 'Comercializadora', 'Seguros', 'Contadores', 'Publicidad', 'Energía'],
  jobPatterns: ['{role} de {area}', '{role} de {area} {level}', '{role} {level} de {area}'],
  roles: ['Gerente', 'Coordinador', 'Analista', 'Director', 'Asistente', 'Especialista', 'Supervisor', 'Consultor', 'Jefe'],
  areas: ['Ventas', 'Mercadotecnia', 'Compras', 'Finanzas', 'Operaciones', 'Sistemas', 'Recursos Humanos', 'Logística', 'Atención a Clientes', 'Producto', 'Comercial', 'Jurídico', 'Crédito y Cobranza'],
  levels: ['Sr.', 'Jr.', 'Regional', 'Nacional'],
  productPatterns: ['{kind}', '{kind} {edition}'],
  productKinds: ['Plan Empresarial', 'Curso de Inglés en Línea', 'Asesoría Fiscal', 'Seguro de Auto', 'CRM de Ventas', 'Software de Nómina', 'Membresía Anual', 'Crédito Hipotecario', 'Plan Dental', 'Coaching de Ventas', 'Maestría en Línea', 'Paneles Solares', 'Tarjeta Empresarial', 'Gastos Médicos Mayores', 'Kit de Inicio', 'Franquicia Express', 'Control de Asistencia', 'Terminal de Cobro', 'Curso de Excel', 'Seguro de Hogar'],
  editions: ['Pro', 'Plus', 'Premium', 'Básico', 'Empresarial'],
  headlinePatterns: [
    'Habla con un asesor por WhatsApp', '{product}: cotiza sin costo', '{product} con {n}% de descuento', 'Conoce {product}',
    'Obtén tu {product} hoy', 'Últimos lugares: {product}', '{product} a 12 meses sin intereses', 'Prueba gratis {product}',
    'Cotiza tu {product} en minutos', 'Respuestas rápidas sobre {product}', '{n}% menos en {product} esta semana', '¿Dudas sobre {product}? Escríbenos',
  ],
};
